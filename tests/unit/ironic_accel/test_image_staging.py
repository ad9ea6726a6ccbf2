# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.

"""The conductor's checked image copies and their staging with Ironic's
firmware_utils, against real HTTP servers: an origin whose content can
change, and ``[deploy] http_root`` served at ``[deploy] http_url``."""

import hashlib
import http.server
import os
import threading
import types

from ironic.common import exception
from ironic.conf import CONF
import pytest
import requests

from ironic_accel import image_staging


class Node(types.SimpleNamespace):
    def set_driver_internal_info(self, key, value):
        self.driver_internal_info[key] = value

    def del_driver_internal_info(self, key):
        self.driver_internal_info.pop(key, None)


def _node():
    return Node(uuid="7c1a43f5-5a5e-4b43-9d6e-0f9a8b1c2d3e",
                driver_internal_info={})


def _serve(directory):
    handler = type("Quiet", (http.server.SimpleHTTPRequestHandler,),
                   {"log_message": lambda *a: None})
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), lambda *a: handler(*a, directory=str(directory)))
    server.gets = 0
    original = handler.do_GET

    def counting_get(self):
        server.gets += 1
        original(self)
    handler.do_GET = counting_get
    threading.Thread(target=server.serve_forever, args=(0.05,),
                     daemon=True).start()
    server.url = "http://127.0.0.1:%d/" % server.server_address[1]
    return server


@pytest.fixture
def origin(tmp_path):
    root = tmp_path / "origin"
    root.mkdir()
    server = _serve(root)
    server.root = root
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def http_server(staging_dirs):
    """Serve the test's http_root and point [deploy] http_url at it."""
    server = _serve(staging_dirs[1])
    CONF.set_override("http_url", server.url, group="deploy")
    yield server
    server.shutdown()
    server.server_close()


def _publish(origin, content, name="fpga-fw.bin"):
    (origin.root / name).write_bytes(content)
    return origin.url + name, hashlib.sha256(content).hexdigest()


def test_download_keeps_a_copy_named_by_its_digest(origin, staging_dirs):
    node = _node()
    url, digest = _publish(origin, b"firmware 2.1.0")

    path, found = image_staging.download(node, url)

    assert found == digest
    assert os.path.dirname(path) == str(staging_dirs[0] / node.uuid)
    assert os.path.basename(path) == f"{digest}-fpga-fw.bin"
    with open(path, "rb") as copy:
        assert copy.read() == b"firmware 2.1.0"


def test_checked_copy_reuses_the_kept_copy_without_downloading(origin):
    node = _node()
    url, digest = _publish(origin, b"firmware 2.1.0")
    kept, _ = image_staging.download(node, url)
    _publish(origin, b"firmware 6.6.6 swapped in")

    assert image_staging.checked_copy(node, url, digest) == kept
    assert origin.gets == 1


def test_checked_copy_fails_when_the_origin_changed_since(origin):
    node = _node()
    url, digest = _publish(origin, b"firmware 2.1.0")
    kept, _ = image_staging.download(node, url)
    os.unlink(kept)
    _publish(origin, b"firmware 6.6.6 swapped in")

    with pytest.raises(exception.InvalidParameterValue) as err:
        image_staging.checked_copy(node, url, digest)
    assert "nothing was sent to the BMC" in str(err.value)
    assert digest in str(err.value)
    assert os.listdir(os.path.dirname(kept)) == []


def test_checked_copy_replaces_a_kept_copy_that_was_altered(origin):
    node = _node()
    url, digest = _publish(origin, b"firmware 2.1.0")
    kept, _ = image_staging.download(node, url)
    with open(kept, "wb") as copy:
        copy.write(b"tampered")

    path = image_staging.checked_copy(node, url, digest)
    assert image_staging.file_digest(path) == digest
    assert origin.gets == 2


def test_oversized_image_fails_naming_the_limit_and_leaves_nothing(
        origin, staging_dirs):
    node = _node()
    url, _ = _publish(origin, b"x" * 4096)
    CONF.set_override("max_image_size", 1024, group="ironic_accel")
    try:
        with pytest.raises(exception.ImageDownloadFailed) as err:
            image_staging.download(node, url)
    finally:
        CONF.clear_override("max_image_size", group="ironic_accel")
    assert "max_image_size" in str(err.value)
    assert os.listdir(staging_dirs[0] / node.uuid) == []


def test_unreachable_origin_names_the_url(origin):
    with pytest.raises(exception.ImageDownloadFailed) as err:
        image_staging.download(_node(), origin.url + "missing.bin")
    assert "missing.bin" in str(err.value)


@pytest.mark.parametrize("source", ["http", "local"])
def test_stage_serves_exactly_the_checked_bytes(origin, http_server, source):
    CONF.set_override("firmware_source", source, group="redfish")
    node = _node()
    url, _ = _publish(origin, b"firmware 2.1.0")
    path, _ = image_staging.download(node, url)
    _publish(origin, b"firmware 6.6.6 swapped in")
    try:
        staged = image_staging.stage(node, path)
    finally:
        CONF.clear_override("firmware_source", group="redfish")

    assert not staged.startswith(origin.url)
    assert staged.startswith(http_server.url)
    assert requests.get(staged, timeout=5).content == b"firmware 2.1.0"
    assert node.driver_internal_info[image_staging.CLEANUP_KEY] == ["http"]


def test_stage_without_an_http_url_fails_before_the_bmc(origin):
    CONF.set_override("http_url", None, group="deploy")
    node = _node()
    url, _ = _publish(origin, b"firmware 2.1.0")
    path, _ = image_staging.download(node, url)

    with pytest.raises(exception.InvalidParameterValue) as err:
        image_staging.stage(node, path)
    assert "[deploy] http_url" in str(err.value)
    assert "nothing was sent to the BMC" in str(err.value)


def test_cleanup_removes_kept_and_staged_copies(origin, http_server,
                                                staging_dirs):
    node = _node()
    url, _ = _publish(origin, b"firmware 2.1.0")
    path, _ = image_staging.download(node, url)
    staged = image_staging.stage(node, path)

    image_staging.cleanup(node)

    assert requests.get(staged, timeout=5).status_code == 404
    assert not (staging_dirs[0] / node.uuid).exists()
    assert os.listdir(staging_dirs[1] / "firmware") == []
    assert image_staging.CLEANUP_KEY not in node.driver_internal_info
