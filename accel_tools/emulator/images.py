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


"""Firmware images the emulator understands, and how it fetches them.

An image is a file whose content is one JSON object::

    {"ironic_accel_image": 1, "kind": "firmware" | "function",
     "device_type": "FPGA", "version": "2.1.0", "function_id": null}

``kind: firmware`` replaces the target device's firmware version;
``kind: function`` is a whole-card user image that loads ``function_id`` into
every reconfiguration slot of an FPGA.
"""

import json
import urllib.error
import urllib.parse
import urllib.request

from accel_tools.emulator import exception

IMAGE_FORMAT = 1
KINDS = ("firmware", "function")
SCHEMES = ("http", "https", "file")

#: The emulator refuses larger downloads: real images are not needed here.
MAX_IMAGE_BYTES = 1024 * 1024
DOWNLOAD_TIMEOUT = 10


def check_uri(uri):
    """Raise ValueError unless ``uri`` is a URL the emulator can download.

    :param uri: the ``ImageURI`` of a SimpleUpdate request.
    """
    if not isinstance(uri, str) or not uri:
        raise ValueError("ImageURI must be a non-empty string")
    scheme = urllib.parse.urlparse(uri).scheme
    if scheme not in SCHEMES:
        raise ValueError("ImageURI %r: unsupported scheme %r (use one of %s)"
                         % (uri, scheme, ", ".join(SCHEMES)))


def parse(content, uri="<image>"):
    """Parse and validate the content of an image.

    :param content: the raw bytes of the image file.
    :param uri: where it came from, for error messages.
    :returns: a dict with ``kind``, ``device_type``, ``version`` and
        ``function_id``.
    :raises: ImageError naming what is wrong.
    """
    try:
        doc = json.loads(content)
    except (UnicodeDecodeError, ValueError):
        raise exception.ImageError("image %s is not an ironic-accel emulator image "
                         "(content is not JSON)" % uri)
    if not isinstance(doc, dict) or doc.get("ironic_accel_image") != IMAGE_FORMAT:
        raise exception.ImageError("image %s is not an ironic-accel emulator image "
                         "(\"ironic_accel_image\": %d missing)" % (uri, IMAGE_FORMAT))
    kind = doc.get("kind", "firmware")
    if kind not in KINDS:
        raise exception.ImageError("image %s: kind %r is not one of %s"
                         % (uri, kind, ", ".join(KINDS)))
    for field in ("device_type", "version"):
        if not isinstance(doc.get(field), str) or not doc[field]:
            raise exception.ImageError("image %s: %s must be a non-empty string" % (uri, field))
    function_id = doc.get("function_id")
    if kind == "function" and (not isinstance(function_id, str) or not function_id):
        raise exception.ImageError("image %s: a function image needs a function_id" % uri)
    return {"kind": kind, "device_type": doc["device_type"],
            "version": doc["version"], "function_id": function_id}


def fetch(uri):
    """Download and parse the image at ``uri`` (http, https or file).

    :raises: ImageError naming the URI and the reason.
    """
    try:
        with urllib.request.urlopen(uri, timeout=DOWNLOAD_TIMEOUT) as rsp:
            content = rsp.read(MAX_IMAGE_BYTES + 1)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise exception.ImageError("cannot download image %s: %s" % (uri, exc))
    if len(content) > MAX_IMAGE_BYTES:
        raise exception.ImageError("image %s is larger than %d bytes" % (uri, MAX_IMAGE_BYTES))
    return parse(content, uri)


def build(version, device_type="FPGA", function_id=None, kind="firmware"):
    """The bytes of an image file, as :func:`parse` reads them."""
    doc = {"ironic_accel_image": IMAGE_FORMAT, "kind": kind,
           "device_type": device_type, "version": version,
           "function_id": function_id}
    return (json.dumps(doc, sort_keys=True) + "\n").encode()
