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

"""Finding and fetching the image that programs a region.

A device profile asks for ``accel:bitstream_id`` (an image id) or
``accel:function_id`` (the one image carrying that function). Images come
from Glance when ``[glance]`` is configured (openstacksdk image proxy;
``accel:function_id`` is an image property, as in real Cyborg), else from the
standalone catalog directory ``[agent] image_catalog_dir``::

    index.json: {"images": [{"id": "...", "function_id": "...",
                             "file": "nlb0.gbs", "sha256": "<hex>"}]}

The agent downloads (it runs on the host that needs the file) and verifies
the checksum before anything is programmed: Glance's multihash
(``os_hash_algo``/``os_hash_value``), else its MD5 ``checksum``; the
catalog's ``sha256``. An image without a checksum is refused.
"""

import contextlib
import dataclasses
import hashlib
import json
import os
import shutil
import tempfile

from accel_common import clients
from cyborg_lite.agent import exception

FUNCTION_PROPERTY = "accel:function_id"
CATALOG_INDEX = "index.json"
_CHUNK = 1024 * 1024


@dataclasses.dataclass
class Image:
    """An image that can be programmed; ``location`` is source specific."""

    id: str
    function_id: str
    hash_algo: str
    hash_value: str
    source: str
    name: str = None
    location: str = None

    def as_dict(self):
        """JSON-able description (for RPC replies)."""
        return {"id": self.id, "name": self.name, "source": self.source,
                "function_id": self.function_id,
                "checksum": f"{self.hash_algo}:{self.hash_value}"
                if self.hash_value else None}


def _hasher(algorithm, image_id):
    try:
        return hashlib.new(algorithm)
    except (ValueError, TypeError):
        raise exception.ImageDownloadFailed(
            image_id=image_id,
            reason=f"unsupported checksum algorithm {algorithm!r}")


def _verify(image, path):
    if not image.hash_value:
        raise exception.ImageDownloadFailed(
            image_id=image.id, reason="the image has no checksum to verify")
    hasher = _hasher(image.hash_algo, image.id)
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            hasher.update(chunk)
    actual = hasher.hexdigest()
    if actual.lower() != image.hash_value.lower():
        raise exception.ChecksumMismatch(
            image_id=image.id, algorithm=image.hash_algo, actual=actual,
            expected=image.hash_value)


class CatalogSource:
    """The standalone catalog: a directory with ``index.json``."""

    name = "catalog"

    def __init__(self, directory):
        self.directory = directory

    def _entries(self):
        path = os.path.join(self.directory, CATALOG_INDEX)
        try:
            with open(path) as handle:
                entries = json.load(handle)["images"]
        except FileNotFoundError:
            raise exception.ImageNotFound(
                reason=f"no image catalog at {path} (and [glance] is not "
                       f"configured)")
        except (ValueError, KeyError, TypeError) as exc:
            raise exception.ImageNotFound(
                reason=f"image catalog {path} is not valid: {exc}")
        images = []
        for entry in entries:
            try:
                images.append(Image(
                    id=str(entry["id"]), name=entry.get("name"),
                    function_id=entry.get("function_id"),
                    hash_algo="sha256", hash_value=entry.get("sha256"),
                    source=self.name,
                    location=os.path.join(self.directory, entry["file"])))
            except (KeyError, TypeError) as exc:
                raise exception.ImageNotFound(
                    reason=f"image catalog {path}: entry {entry!r} lacks "
                           f"{exc}")
        return images

    def by_id(self, image_id):
        for image in self._entries():
            if image.id == image_id:
                return image
        raise exception.ImageNotFound(
            reason=f"no image {image_id} in the catalog {self.directory}")

    def by_function(self, function_id):
        return [image for image in self._entries()
                if image.function_id == function_id]

    @contextlib.contextmanager
    def fetch(self, image):
        _verify(image, image.location)
        yield image.location


class GlanceSource:
    """Glance through openstacksdk's image proxy (``[glance]`` options)."""

    name = "glance"

    def __init__(self, conf):
        self.conf = conf
        self._conn = None

    @property
    def conn(self):
        if self._conn is None:
            self._conn = clients.connection(self.conf, "glance")
        return self._conn

    def _image(self, body):
        properties = body.get("properties") or {}
        function_id = body.get(FUNCTION_PROPERTY,
                               properties.get(FUNCTION_PROPERTY))
        if body.get("os_hash_value") and body.get("os_hash_algo"):
            algo, value = body["os_hash_algo"], body["os_hash_value"]
        else:
            algo, value = "md5", body.get("checksum")
        return Image(id=body["id"], name=body.get("name"),
                     function_id=function_id, hash_algo=algo,
                     hash_value=value, source=self.name)

    def _get(self, url, **params):
        try:
            response = self.conn.image.get(url, params=params,
                                           raise_exc=False)
        except Exception as exc:
            raise exception.ImageNotFound(
                reason=f"Glance request {url} failed: {exc}")
        if response.status_code == 404:
            return None
        if response.status_code >= 400:
            raise exception.ImageNotFound(
                reason=f"Glance answered {response.status_code} to {url}: "
                       f"{response.text[:200]}")
        return response.json()

    def by_id(self, image_id):
        body = self._get(f"/images/{image_id}")
        if body is None:
            raise exception.ImageNotFound(
                reason=f"Glance has no image {image_id}")
        return self._image(body)

    def by_function(self, function_id):
        body = self._get("/images", **{FUNCTION_PROPERTY: function_id})
        return [self._image(item) for item in (body or {}).get("images", [])]

    @contextlib.contextmanager
    def fetch(self, image):
        directory = tempfile.mkdtemp(prefix="cyborg-lite-image-",
                                     dir=self.conf.agent.image_cache_dir)
        try:
            path = os.path.join(directory, f"{image.id}.img")
            try:
                response = self.conn.image.get(
                    f"/images/{image.id}/file", stream=True,
                    raise_exc=False)
                if response.status_code >= 400:
                    raise exception.ImageDownloadFailed(
                        image_id=image.id,
                        reason=f"Glance answered {response.status_code}")
                with open(path, "wb") as handle:
                    for chunk in response.iter_content(_CHUNK):
                        handle.write(chunk)
            except exception.AgentError:
                raise
            except Exception as exc:
                raise exception.ImageDownloadFailed(image_id=image.id,
                                                    reason=str(exc))
            _verify(image, path)
            yield path
        finally:
            shutil.rmtree(directory, ignore_errors=True)


def source(conf):
    """Glance when ``[glance]`` is configured, else the local catalog."""
    if clients.is_configured(conf, "glance"):
        return GlanceSource(conf)
    return CatalogSource(conf.agent.image_catalog_dir)


def resolve(conf, bitstream_id=None, function_id=None, image_source=None):
    """The image a device profile asks for.

    :param bitstream_id: an image id (``accel:bitstream_id``).
    :param function_id: a function (``accel:function_id``); exactly one
        image must carry it.
    :raises InvalidRequest: when neither or both are given.
    :raises ImageNotFound, ImageAmbiguous:
    :returns: an :class:`Image`.
    """
    if bool(bitstream_id) == bool(function_id):
        raise exception.InvalidRequest(
            reason="give exactly one of accel:bitstream_id and "
                   "accel:function_id")
    image_source = image_source or source(conf)
    if bitstream_id:
        image = image_source.by_id(bitstream_id)
        return image
    found = image_source.by_function(function_id)
    if not found:
        raise exception.ImageNotFound(
            reason=f"no {image_source.name} image has "
                   f"{FUNCTION_PROPERTY}={function_id}")
    if len(found) > 1:
        raise exception.ImageAmbiguous(
            count=len(found), function_id=function_id,
            ids=", ".join(sorted(image.id for image in found)))
    return found[0]
