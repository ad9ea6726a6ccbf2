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

"""The checked copy of an accelerator image, and where the BMC fetches it.

An image is downloaded once by the conductor, hashed while it is written,
and kept under ``<tempdir>/<node uuid>/`` named by its sha256 digest. The
BMC never gets the URL the step was given: a push method sends it this
copy, and ``SimpleUpdate`` gets a URL of this copy staged with Ironic's
own :mod:`ironic.drivers.modules.redfish.firmware_utils` (``[redfish]
firmware_source``: ``http`` and ``local`` hard-link it under ``[deploy]
http_root`` served at ``[deploy] http_url``, ``swift`` uploads it with a
temporary URL). Unlike Ironic's own ``update`` step, ``http`` does not
mean "let the BMC download the original": an origin that changes between
two downloads (a mirror being updated, anyone on the path) would then
decide what the device runs.

:func:`cleanup` removes both the kept copies and the staged ones; the
steps call it however they end.
"""

import hashlib
import os
import tempfile
import urllib.parse

from ironic.common import exception
from ironic.conf import CONF
from ironic.drivers.modules.redfish import firmware_utils
from oslo_log import log as logging
import requests

from ironic_accel import conf as accel_conf

LOG = logging.getLogger(__name__)

accel_conf.register_opts(CONF)

#: driver_internal_info key Ironic's firmware_utils.cleanup reads: the
#: places ("http", "swift") something was staged for the node.
CLEANUP_KEY = "firmware_cleanup"

_CHUNK = 1 << 20


def _workdir(node):
    # NOTE(ironic-accel): the directory Ironic's firmware_utils.cleanup
    # removes, so one cleanup covers Ironic's files and these.
    path = os.path.join(tempfile.gettempdir(), node.uuid)
    os.makedirs(path, mode=0o700, exist_ok=True)
    return path


def _basename(url):
    name = os.path.basename(urllib.parse.urlparse(url).path) or "image"
    # NOTE(ironic-accel): some BMCs judge an image by its extension, so the
    # staged name keeps the original one; anything else is dropped.
    return "".join(c for c in name if c.isalnum() or c in "._-")[-100:]


def _copy_path(node, url, digest):
    return os.path.join(_workdir(node), f"{digest}-{_basename(url)}")


def _read_chunks(url):
    parsed = urllib.parse.urlparse(url)
    if parsed.scheme == "file":
        with open(urllib.parse.unquote(parsed.path), "rb") as image:
            yield from iter(lambda: image.read(_CHUNK), b"")
        return
    with requests.get(url, stream=True,
                      timeout=CONF.ironic_accel.image_download_timeout) as rsp:
        rsp.raise_for_status()
        yield from rsp.iter_content(_CHUNK)


def file_digest(path):
    """The sha256 hex digest of a local file."""
    digest = hashlib.sha256()
    with open(path, "rb") as image:
        for chunk in iter(lambda: image.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def download(node, url):
    """Download ``url`` once into the node's work directory.

    The bytes are hashed as they are written; the file is named by that
    digest only once complete, so a name always matches its content.

    :returns: ``(path, sha256 hex digest)``.
    :raises: ImageDownloadFailed naming the URL (unreachable, HTTP error,
        larger than ``[ironic_accel] max_image_size``).
    """
    limit = CONF.ironic_accel.max_image_size
    digest = hashlib.sha256()
    size = 0
    handle = tempfile.NamedTemporaryFile(dir=_workdir(node),
                                         prefix=".download-", delete=False)
    try:
        with handle:
            for chunk in _read_chunks(url):
                size += len(chunk)
                if size > limit:
                    raise exception.ImageDownloadFailed(
                        image_href=url,
                        reason=f"larger than [ironic_accel]max_image_size "
                               f"({limit})")
                digest.update(chunk)
                handle.write(chunk)
        path = _copy_path(node, url, digest.hexdigest())
        os.replace(handle.name, path)
    except (OSError, requests.RequestException) as exc:
        discard(handle.name)
        raise exception.ImageDownloadFailed(image_href=url, reason=exc)
    except BaseException:
        discard(handle.name)
        raise
    return path, digest.hexdigest()


def discard(path):
    """Remove a downloaded copy (one that failed its check)."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def checked_copy(node, url, expected):
    """The local copy of ``url`` whose sha256 is ``expected``.

    The copy kept by an earlier :func:`download` when it is still there
    and still hashes right; otherwise ``url`` is downloaded again and must
    hash to ``expected``.

    :returns: the path of the checked copy.
    :raises: InvalidParameterValue when the image now has another digest
        (nothing is sent to the BMC); ImageDownloadFailed.
    """
    kept = _copy_path(node, url, expected)
    if os.path.exists(kept) and file_digest(kept) == expected:
        return kept
    discard(kept)
    path, digest = download(node, url)
    if digest != expected:
        discard(path)
        raise exception.InvalidParameterValue(
            f"Image checksum mismatch for node {node.uuid}: {url} now has "
            f"sha256:{digest}, expected sha256:{expected}; nothing was sent "
            f"to the BMC")
    return path


def _source():
    source = (CONF.redfish.firmware_source or "http").lower()
    # NOTE(ironic-accel): "http" in Ironic lets the BMC fetch an http URL
    # from where it is; here it stages on the conductor's HTTP server like
    # "local", because the origin's later answers were never checked.
    return "swift" if source == "swift" else "local"


def stage(node, path):
    """Publish the checked copy at ``path`` where the BMC can fetch it.

    Records in ``driver_internal_info[CLEANUP_KEY]`` what
    :func:`cleanup` must remove (the caller saves the node).

    :returns: the URL to give the BMC.
    :raises: InvalidParameterValue when ``[redfish] firmware_source`` needs
        an HTTP server and ``[deploy] http_url`` is not set; RedfishError
        when staging fails.
    """
    source = _source()
    if source == "local" and not (CONF.deploy.external_http_url
                                  or CONF.deploy.http_url):
        raise exception.InvalidParameterValue(
            f"Node {node.uuid}: [redfish] firmware_source is "
            f"{CONF.redfish.firmware_source!r}, so the checked image is "
            f"served from the conductor's HTTP server, but neither [deploy] "
            f"http_url nor [deploy] external_http_url is set; nothing was "
            f"sent to the BMC")
    url, need_cleanup = firmware_utils.stage(node, source, path)
    places = list(node.driver_internal_info.get(CLEANUP_KEY) or [])
    if need_cleanup and need_cleanup not in places:
        places.append(need_cleanup)
        node.set_driver_internal_info(CLEANUP_KEY, places)
    LOG.debug("Node %(node)s: checked image %(path)s staged at %(url)s",
              {"node": node.uuid, "path": path, "url": url})
    return url


def cleanup(node):
    """Remove the node's kept and staged image copies (the caller saves the
    node). Never raises: a leftover file must not fail a step that is
    already ending."""
    try:
        firmware_utils.cleanup(node)
    except Exception as exc:
        LOG.warning("Node %(node)s: removing staged accelerator images "
                    "failed: %(exc)s", {"node": node.uuid, "exc": exc})
    node.del_driver_internal_info(CLEANUP_KEY)
