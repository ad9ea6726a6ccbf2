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

"""The adapter over sushy's private names, against a real HTTP server and
sushy's real Connector; and the rule that nothing else in the plugin
touches a private name of sushy or Ironic."""

import ast
import base64
import http.server
import pathlib
import threading

import pytest
import sushy
from sushy import connector as sushy_connector

from ironic_accel.redfish import client as redfish_client
from ironic_accel.redfish import private_api
from tests.unit.ironic_accel import recorded_bmc as rbmc

PACKAGE = pathlib.Path(__file__).resolve().parents[4] / "ironic_accel"


@pytest.fixture
def server():
    """Records each POST's headers and raw body; answers ``status``."""
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            self.server.seen.append((self.path, dict(self.headers), body))
            self.send_response(self.server.status)
            self.send_header("Location", "/redfish/v1/TaskService/Tasks/7")
            self.send_header("Content-Length", "0")
            self.end_headers()

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.seen, httpd.status = [], 202
    threading.Thread(target=httpd.serve_forever, args=(0.05,),
                     daemon=True).start()
    httpd.url = "http://127.0.0.1:%d" % httpd.server_address[1]
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def _connector(server):
    connector = sushy_connector.Connector(server.url, verify=False,
                                          server_side_retries=1)
    connector.set_http_basic_auth("admin", "secret")
    return connector


def test_post_raw_sends_the_bytes_as_is_over_the_session(server, tmp_path):
    image = tmp_path / "image.bin"
    image.write_bytes(b"\x00\xffraw image\x00")

    with open(image, "rb") as body:
        response = private_api.post_raw(
            _connector(server), "/redfish/v1/UpdateService/FWUpdate", body,
            headers={"Content-Type": "application/octet-stream"}, timeout=5)

    assert response.status_code == 202
    assert response.headers["Location"] == "/redfish/v1/TaskService/Tasks/7"
    [(path, headers, body)] = server.seen
    assert path == "/redfish/v1/UpdateService/FWUpdate"
    assert body == b"\x00\xffraw image\x00"
    assert headers["Content-Type"] == "application/octet-stream"
    assert headers["Authorization"] == "Basic " + base64.b64encode(
        b"admin:secret").decode()


@pytest.mark.parametrize("status, error", [
    (400, sushy.exceptions.BadRequestError),
    (401, sushy.exceptions.AccessError),
    (503, sushy.exceptions.ServerSideError),
])
def test_post_raw_raises_sushys_error_for_the_status(server, status, error):
    server.status = status
    with pytest.raises(error):
        private_api.post_raw(_connector(server), "/push", b"x",
                             headers={}, timeout=5)


def test_connector_of_is_the_connector_a_resource_was_read_with(
        recorded_bmc):
    node = rbmc.node_for(recorded_bmc)
    connector, system = redfish_client.call(
        node, None, "GET System",
        lambda client: (client.connector, redfish_client.system(client,
                                                                node)))
    assert private_api.connector_of(system) is connector


def _private_uses(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    defined = {n.name for n in ast.walk(tree)
               if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    defined |= {t.attr for n in ast.walk(tree) if isinstance(n, ast.Assign)
                for t in n.targets if isinstance(t, ast.Attribute)
                and isinstance(t.value, ast.Name) and t.value.id == "self"}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                and not node.attr.startswith("__")):
            continue
        base = node.value
        if isinstance(base, ast.Name) and base.id in ("self", "cls"):
            # NOTE(ironic-accel): self._x is ours only if this module
            # defines it; otherwise it is inherited from Ironic or sushy.
            if node.attr in defined:
                continue
        yield f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: " \
              f"{ast.unparse(node)}"


def test_no_private_name_of_sushy_or_ironic_outside_the_adapter():
    found = [use for path in sorted(PACKAGE.rglob("*.py"))
             if path.name != "private_api.py"
             for use in _private_uses(path)]
    assert found == []
