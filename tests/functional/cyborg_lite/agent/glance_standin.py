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

"""A small stand-in of the Glance v2 images API (Glance does not run here).

Serves what the agent uses, shaped like Glance's replies: the version
document, ``GET /v2/images/{id}``, ``GET /v2/images?<property>=<value>``
(Glance filters on custom properties exactly), ``GET /v2/images/{id}/file``.
Images carry Glance's multihash (``os_hash_algo`` sha512) and MD5
``checksum``; custom properties such as ``accel:function_id`` are top-level
keys, as Glance returns them.
"""

import hashlib
import json
import threading
import urllib.parse
import uuid
from wsgiref import simple_server


class _Quiet(simple_server.WSGIRequestHandler):
    def log_message(self, *args):
        pass


class GlanceStandIn:
    """Start with :meth:`start`; add images with :meth:`add_image`."""

    def __init__(self):
        self.images = {}
        self.data = {}
        self.requests = []
        self._server = None

    def add_image(self, content, function_id=None, corrupt=False, **extra):
        """Register an image; ``corrupt`` serves other bytes than hashed."""
        image_id = str(uuid.uuid4())
        body = {
            "id": image_id, "name": f"bitstream-{image_id[:8]}",
            "status": "active", "visibility": "public",
            "disk_format": "raw", "container_format": "bare",
            "size": len(content),
            "checksum": hashlib.md5(content).hexdigest(),
            "os_hash_algo": "sha512",
            "os_hash_value": hashlib.sha512(content).hexdigest(),
            "self": f"/v2/images/{image_id}",
            "file": f"/v2/images/{image_id}/file",
            "schema": "/v2/schemas/image",
        }
        if function_id is not None:
            body["accel:function_id"] = function_id
        body.update(extra)
        self.images[image_id] = body
        self.data[image_id] = b"corrupted!" if corrupt else content
        return image_id

    @property
    def url(self):
        return f"http://127.0.0.1:{self._server.server_port}"

    def start(self):
        self._server = simple_server.make_server("127.0.0.1", 0, self.app,
                                                 handler_class=_Quiet)
        threading.Thread(target=self._server.serve_forever, args=(0.05,),
                         daemon=True).start()
        return self

    def stop(self):
        self._server.shutdown()
        self._server.server_close()

    @staticmethod
    def _json(start_response, status, body):
        payload = json.dumps(body).encode()
        start_response(status, [("Content-Type", "application/json"),
                                ("Content-Length", str(len(payload)))])
        return [payload]

    def app(self, environ, start_response):
        path = environ["PATH_INFO"].rstrip("/")
        query = urllib.parse.parse_qs(environ.get("QUERY_STRING", ""))
        self.requests.append((environ["REQUEST_METHOD"], path, query))
        if path == "":
            return self._json(start_response, "300 Multiple Choices", {
                "versions": [{"id": "v2.16", "status": "CURRENT", "links": [
                    {"rel": "self", "href": f"{self.url}/v2/"}]}]})
        parts = path.split("/")[1:]
        if parts == ["v2", "images"]:
            found = [image for image in self.images.values()
                     if all(str(image.get(key)) == values[0]
                            for key, values in query.items()
                            if key not in ("limit", "marker"))]
            return self._json(start_response, "200 OK", {
                "images": found, "first": "/v2/images",
                "schema": "/v2/schemas/images"})
        if len(parts) >= 3 and parts[:2] == ["v2", "images"]:
            image_id = parts[2]
            if image_id not in self.images:
                return self._json(start_response, "404 Not Found", {
                    "message": f"No image found with ID {image_id}",
                    "code": "404 Not Found", "title": "Not Found"})
            if parts[3:] == ["file"]:
                data = self.data[image_id]
                start_response("200 OK", [
                    ("Content-Type", "application/octet-stream"),
                    ("Content-Length", str(len(data)))])
                return [data]
            if not parts[3:]:
                return self._json(start_response, "200 OK",
                                  self.images[image_id])
        return self._json(start_response, "404 Not Found",
                          {"message": "not found"})
