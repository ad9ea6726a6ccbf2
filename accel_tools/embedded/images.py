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

"""Firmware images for the BMC emulator, and an HTTP server for them.

Ironic's ``update_accelerator_firmware`` step downloads the image to check
its checksum and hands the URL to the BMC, so images are served over HTTP::

    path, checksum = make_firmware_image(directory, "2.1.0")
    server = ImageServer(directory)
    url = server.url_for(path)
"""

import functools
import hashlib
import http.server
import pathlib
import threading

from accel_tools.emulator import images


def make_firmware_image(directory, version, device_type="FPGA",
                        function_id=None, kind="firmware"):
    """Write an emulator firmware image into ``directory``.

    :param version: the firmware version the image carries.
    :param device_type: the device type it is for (``FPGA``, ``GPU``).
    :param function_id: the function a whole-card image loads.
    :param kind: ``firmware`` or a whole-card ``image``.
    :returns: ``(path, "sha256:<hex>")``.
    """
    content = images.build(version, device_type, function_id, kind)
    name = "%s-%s-%s%s.img" % (kind, device_type.lower(), version,
                              "-%s" % function_id if function_id else "")
    path = pathlib.Path(directory) / name
    path.write_bytes(content)
    return path, "sha256:" + hashlib.sha256(content).hexdigest()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        self.server.downloads.append(self.path)
        super().do_GET()


class ImageServer:
    """A directory served over HTTP on 127.0.0.1 (``port``, by default a
    free one), from a daemon thread of this process."""

    def __init__(self, root, port=0):
        self.root = pathlib.Path(root)
        handler = functools.partial(_QuietHandler, directory=str(self.root))
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", port),
                                                       handler)
        self._server.downloads = []
        self.url = "http://127.0.0.1:%d" % self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        args=(0.05,), daemon=True)
        self._thread.start()

    @property
    def downloads(self):
        """Paths requested so far."""
        return list(self._server.downloads)

    def url_for(self, path):
        """The URL of a file under the served directory."""
        rel = pathlib.Path(path).resolve().relative_to(self.root.resolve())
        return "%s/%s" % (self.url, rel.as_posix())

    def stop(self):
        """Stop serving."""
        self._server.shutdown()
        self._server.server_close()
