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

"""The agent's RPC endpoint: host work for the API, done by the drivers.

Every method answers a plain JSON-able dict. Errors are exceptions of
:mod:`cyborg_lite.agent.exception`; anything else a driver raises is wrapped
into :class:`~cyborg_lite.agent.exception.AgentError` so the caller always
gets a message it can put into a ``BindFailed`` reason. While a method runs,
the context the API sent (the ids of the request it serves) is this thread's
current one, so every log line of the call carries them.
"""

import functools
import threading
import time

from oslo_log import log as logging
import oslo_messaging

from cyborg_lite import context
from cyborg_lite.agent import drivers
from cyborg_lite.agent import exception
from cyborg_lite.agent import images
from cyborg_lite.agent.drivers import base

LOG = logging.getLogger(__name__)

#: RPC API version of this endpoint (and of rpcapi.AgentAPI).
RPC_API_VERSION = "1.0"


def _wrap_errors(method):
    @functools.wraps(method)
    def wrapper(self, ctxt, **kwargs):
        context.adopt(ctxt)
        LOG.debug("%s(%s) asked", method.__name__, kwargs)
        try:
            return method(self, ctxt, **kwargs)
        except exception.AgentError as exc:
            LOG.warning("%s(%s) failed: %s", method.__name__, kwargs, exc)
            raise
        except Exception as exc:
            LOG.exception("%s(%s) failed unexpectedly", method.__name__,
                          kwargs)
            raise exception.AgentError(
                reason=f"{method.__name__} on {self.host}: "
                       f"{type(exc).__name__}: {exc}")
        finally:
            context.clear()
    return wrapper


class AgentManager:
    """RPC endpoint of ``cyborg-lite-agent`` (topic ``cyborg-lite-agent``)."""

    target = oslo_messaging.Target(version=RPC_API_VERSION)

    def __init__(self, conf, driver_map=None, image_source=None):
        self._conf = conf
        self.host = conf.agent.host
        self._drivers = (driver_map if driver_map is not None
                         else drivers.load_enabled(conf))
        self._image_source = image_source
        self._owners = {}
        self._guard = threading.Lock()
        self._busy = set()
        self._without_tool = set()

    def _discovered_by(self, name, driver):
        """``driver.discover()``; none when its vendor tool is absent (a
        warning the first time), so the other drivers still discover."""
        try:
            found = driver.discover()
        except exception.ToolNotFound as exc:
            if name not in self._without_tool:
                self._without_tool.add(name)
                LOG.warning("Driver %s discovers no device on %s: %s. "
                            "The other drivers discover as usual; remove "
                            "%s from [agent] enabled_drivers if this host "
                            "has none of its devices.", name, self.host,
                            exc, name)
            return []
        self._without_tool.discard(name)
        return found

    def _discover_all(self):
        devices, owners = [], {}
        for name, driver in self._drivers.items():
            for device in self._discovered_by(name, driver):
                address = device["pci_address"].lower()
                if address in owners:
                    continue
                owners[address] = name
                for region in device["regions"]:
                    for handle in region.get("attach_handles", []):
                        owners.setdefault(handle["pci_address"].lower(),
                                          name)
                devices.append(dict(device, driver=name))
        with self._guard:
            self._owners = owners
        return devices

    def _driver_for(self, pci_address):
        address = str(pci_address).lower()
        name = self._owners.get(address)
        if name is None:
            self._discover_all()
            name = self._owners.get(address)
        if name is None:
            raise exception.DeviceNotFound(pci_address=pci_address,
                                           host=self.host)
        return self._drivers[name]

    @staticmethod
    def _region(pci_address, region_id):
        if not pci_address or region_id in (None, ""):
            raise exception.InvalidRequest(
                reason="pci_address and region_id are required")
        return base.Region(str(pci_address).lower(), str(region_id))

    def _claim(self, region):
        with self._guard:
            if region in self._busy:
                raise exception.RegionBusy(pci_address=region.pci_address,
                                           region_id=region.region_id)
            self._busy.add(region)

    def _release(self, region):
        with self._guard:
            self._busy.discard(region)

    @_wrap_errors
    def discover(self, ctxt):
        """Devices of this host with their in-band attach handles.

        :returns: ``{"host": ..., "devices": [...]}``; each device carries
            the ``driver`` that serves it.
        """
        return {"host": self.host, "devices": self._discover_all()}

    @_wrap_errors
    def current_function(self, ctxt, pci_address, region_id):
        """Read the function a region runs now from the device itself.

        :returns: ``{"host", "pci_address", "region_id", "function_id",
            "state", "detail"}``; ``state`` is ``ready``, ``programming``
            or ``error`` (then ``function_id`` is ``None``: unknown).
        """
        region = self._region(pci_address, region_id)
        reading = self._driver_for(region.pci_address).current_function(
            region)
        with self._guard:
            if region in self._busy and reading["state"] == base.READY:
                # NOTE(cyborg_lite): a program call fetching its image: the
                # device is not touched yet, but the region is being
                # programmed (a reconciler must not start it again).
                reading = base.reading(None, base.PROGRAMMING,
                                       "programming: fetching the image")
        return dict(reading, host=self.host, pci_address=region.pci_address,
                    region_id=region.region_id)

    @_wrap_errors
    def find_image(self, ctxt, bitstream_id=None, function_id=None):
        """The image :meth:`program_region` would load, without loading it
        (the API asks before it takes a region for programming).

        :returns: the image's description (``Image.as_dict``).
        :raises ImageNotFound, ImageAmbiguous, InvalidRequest:
        """
        image_source = self._image_source or images.source(self._conf)
        return images.resolve(self._conf, bitstream_id=bitstream_id,
                              function_id=function_id,
                              image_source=image_source).as_dict()

    @_wrap_errors
    def program_region(self, ctxt, pci_address, region_id,
                       bitstream_id=None, function_id=None):
        """Resolve the image, download and verify it, program, read back.

        Concurrent programming of the same region is refused
        (:class:`RegionBusy`) rather than queued.

        :returns: ``{"host", "pci_address", "region_id", "function_id",
            "image": {...}, "seconds"}`` once the device confirmed the
            function.
        :raises ProgrammingFailed: also when the function read back differs
            from the image's function.
        """
        region = self._region(pci_address, region_id)
        driver = self._driver_for(region.pci_address)
        image_source = self._image_source or images.source(self._conf)
        image = images.resolve(self._conf, bitstream_id=bitstream_id,
                               function_id=function_id,
                               image_source=image_source)
        expected = image.function_id or function_id
        self._claim(region)
        started = time.monotonic()
        try:
            with image_source.fetch(image) as path:
                LOG.info("Programming %s region %s with image %s "
                         "(function %s)", region.pci_address,
                         region.region_id, image.id, expected)
                driver.program(region, path, expected)
            reading = driver.current_function(region)
        finally:
            self._release(region)
        if reading["state"] != base.READY:
            raise exception.ProgrammingFailed(
                pci_address=region.pci_address, region_id=region.region_id,
                reason=f"the device reports {reading['state']} after "
                       f"programming: {reading.get('detail')}")
        if (expected is not None and base.normalize_function_id(
                reading["function_id"]) != base.normalize_function_id(
                    expected)):
            raise exception.ProgrammingFailed(
                pci_address=region.pci_address, region_id=region.region_id,
                reason=f"the device runs {reading['function_id']!r} after "
                       f"programming, expected {expected!r}")
        return {"host": self.host, "pci_address": region.pci_address,
                "region_id": region.region_id,
                "function_id": reading["function_id"],
                "image": image.as_dict(),
                "seconds": round(time.monotonic() - started, 3)}

    @_wrap_errors
    def reset_region(self, ctxt, pci_address, region_id):
        """Bring a region back to "no function loaded" (clears ``error``).

        :returns: the reading after the reset.
        """
        region = self._region(pci_address, region_id)
        driver = self._driver_for(region.pci_address)
        self._claim(region)
        try:
            driver.reset(region)
            reading = driver.current_function(region)
        finally:
            self._release(region)
        return dict(reading, host=self.host, pci_address=region.pci_address,
                    region_id=region.region_id)

    @_wrap_errors
    def create_mdev(self, ctxt, pci_address, mdev_type, mdev_uuid):
        """Create a mediated device (idempotent).

        :returns: ``{"host", "pci_address", "mdev_type", "mdev_uuid",
            "created"}``.
        """
        address = str(pci_address).lower()
        result = self._driver_for(address).create_mdev(address, mdev_type,
                                                       mdev_uuid)
        return dict(result, host=self.host, pci_address=address,
                    mdev_type=mdev_type, mdev_uuid=mdev_uuid)

    @_wrap_errors
    def remove_mdev(self, ctxt, pci_address, mdev_uuid):
        """Remove a mediated device (idempotent).

        :returns: ``{"host", "pci_address", "mdev_uuid", "removed"}``.
        """
        address = str(pci_address).lower()
        result = self._driver_for(address).remove_mdev(address, mdev_uuid)
        return dict(result, host=self.host, pci_address=address,
                    mdev_uuid=mdev_uuid)
