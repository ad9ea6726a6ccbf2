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

"""``nvidia_mdev``: NVIDIA vGPUs as mediated devices (mdev) through sysfs.

Each mdev parent under ``/sys/class/mdev_bus/<bdf>`` lists its types in
``mdev_supported_types/<type>/`` (``name``, ``available_instances``,
``devices/``). Creating a vGPU writes its UUID to ``<type>/create``; removing
it writes ``1`` to ``/sys/bus/mdev/devices/<uuid>/remove`` (the kernel's mdev
ABI); both writes run in the privsep daemon
(:mod:`cyborg_lite.agent.privsep.mdev`). On SR-IOV GPUs (Ampere and later)
the parents are VFs: they are reported under their PF, the address Ironic
knows the card by, and VFs are never offered as whole GPUs (cubecos#1262).

The mdev of a bound ARQ is Nova's: its libvirt driver creates it at the
first spawn on the handle, named by the handle's uuid, and finds it again
for the next instance on that handle. Nothing in cyborg_lite creates or
removes one while binding or deleting ARQs (see "What the guest gets" in
the architecture document); an mdev that exists counts as one of its
parent's handles, so the report does not change when Nova creates one.

Only NVIDIA parents are claimed: PCI vendor 0x10de and ``nvidia-*`` types
(an Intel GVT-g iGPU's ``i915-*`` types and an s390 ``vfio_ccw-*`` parent are
other drivers' business). A pre-Ampere GPU is its own parent and runs one
vGPU type at a time: it offers the handles of one type only
(``[agent] enabled_vgpu_types``), not of every type at once. vGPU 17 and
later on Ampere and newer GPUs uses NVIDIA's vendor-specific VFIO on SR-IOV
VFs and no mdev bus at all: such a GPU is refused with a message naming the
driver generation, never silently skipped.
"""

import os

from oslo_log import log as logging

from cyborg_lite.agent import exception
from cyborg_lite.agent import privsep
from cyborg_lite.agent.drivers import _host
from cyborg_lite.agent.drivers import base
from cyborg_lite.agent.privsep import checks
from cyborg_lite.agent.privsep import mdev as privsep_mdev

LOG = logging.getLogger(__name__)

NVIDIA_VENDOR = "0x10de"
TYPE_PREFIX = "nvidia-"
#: PCI class of display controllers (VGA 0x0300, 3D 0x0302).
DISPLAY_CLASS = "0x03"


class NvidiaMdevDriver(base.AcceleratorDriver):
    """NVIDIA GPUs carved into vGPUs; no programming."""

    name = "nvidia_mdev"

    def __init__(self, conf):
        super().__init__(conf)
        self.sysfs = _host.Sysfs(conf.agent.sysfs_root)

    def _is_nvidia(self, pci_address):
        vendor, _ = self.sysfs.pci_ids(pci_address)
        return vendor.lower() == NVIDIA_VENDOR

    def _parents(self):
        """NVIDIA mdev parent BDF -> its PF BDF (itself unless a VF)."""
        bus = self.sysfs.path("class", "mdev_bus")
        try:
            names = sorted(os.listdir(bus))
        except FileNotFoundError:
            return {}
        parents = {}
        for name in names:
            physfn = self.sysfs.link_name(os.path.join(bus, name, "physfn"))
            pf = physfn or name
            if not (_host.PCI_ADDRESS.match(name) and self._is_nvidia(pf)):
                LOG.debug("nvidia_mdev: mdev parent %s is not an NVIDIA "
                          "GPU; left to other drivers", name)
                continue
            parents[name] = pf
        return parents

    def _types_dir(self, parent):
        return self.sysfs.path("class", "mdev_bus", parent,
                               "mdev_supported_types")

    def _types(self, parent):
        """NVIDIA mdev type -> (available instances, created instances)."""
        types = {}
        base_dir = self._types_dir(parent)
        try:
            names = sorted(os.listdir(base_dir))
        except FileNotFoundError:
            return types
        for name in names:
            if not name.startswith(TYPE_PREFIX):
                continue
            type_dir = os.path.join(base_dir, name)
            available = int(self.sysfs.read(
                os.path.join(type_dir, "available_instances"), "0") or 0)
            try:
                created = len(os.listdir(os.path.join(type_dir, "devices")))
            except FileNotFoundError:
                created = 0
            types[name] = (available, created)
        return types

    def _offered(self, parent, is_vf):
        """The types a parent offers handles for: all of a VF's (it runs
        one vGPU), one of a time-sliced GPU's (see module doc)."""
        types = self._types(parent)
        if is_vf or len(types) <= 1:
            return types
        in_use = [t for t, (_, created) in types.items() if created]
        if in_use:
            chosen = in_use[0]
        else:
            enabled = [t for t in self.conf.agent.enabled_vgpu_types
                       if t in types]
            chosen = enabled[0] if enabled else max(
                types, key=lambda t: (types[t][0], t))
        return {chosen: types[chosen]}

    def _vendor_vfio_gpus(self, known):
        """NVIDIA GPUs with SR-IOV VFs but no mdev parent: vGPU 17+."""
        devices_dir = self.sysfs.path("bus", "pci", "devices")
        try:
            names = sorted(os.listdir(devices_dir))
        except FileNotFoundError:
            return []
        found = []
        for name in names:
            if name in known or self.sysfs.physical_function(name):
                continue
            pci_class = self.sysfs.read(
                os.path.join(devices_dir, name, "class"), "")
            if (self._is_nvidia(name)
                    and pci_class.lower().startswith(DISPLAY_CLASS)
                    and self.sysfs.virtual_functions(name)):
                found.append(name)
        return found

    def discover(self):
        """GPUs with one MDEV attach handle per possible vGPU instance.

        :raises UnsupportedDevice: for an NVIDIA GPU whose vGPUs are SR-IOV
            VFs on vendor-specific VFIO (vGPU 17+), which has no mdev bus.
        """
        by_pf = {}
        for parent, pf in self._parents().items():
            by_pf.setdefault(pf, []).append(parent)
        unsupported = self._vendor_vfio_gpus(set(by_pf))
        if unsupported:
            raise exception.UnsupportedDevice(
                driver=self.name, what=", ".join(unsupported),
                reason="NVIDIA vGPU 17 or later (SR-IOV VFs on NVIDIA's "
                       "vendor-specific VFIO, no mdev bus); this driver "
                       "serves mdev-based vGPU (16 and earlier) only")
        devices = []
        for pf, parents in sorted(by_pf.items()):
            vendor_id, product_id = self.sysfs.pci_ids(pf)
            handles = []
            for parent in sorted(parents):
                for mdev_type, (available, created) in self._offered(
                        parent, is_vf=parent != pf).items():
                    handles.extend(
                        {"type": "MDEV", "pci_address": parent,
                         "mdev_type": mdev_type}
                        for _ in range(available + created))
            devices.append({
                "type": "GPU", "vendor": "NVIDIA", "vendor_id": vendor_id,
                "product_id": product_id, "pci_address": pf,
                "program_mode": "single",
                "regions": [{"id": "0", "function_id": None,
                             "state": base.READY,
                             "attach_handles": handles}],
            })
        return devices

    def current_function(self, region):
        """GPUs run no loadable function: always ``None``, ready."""
        if region.pci_address not in self._parents().values():
            raise exception.RegionNotFound(pci_address=region.pci_address,
                                           region_id=region.region_id)
        return base.reading(None)

    def _mdev_dir(self, mdev_uuid):
        return self.sysfs.path("bus", "mdev", "devices", mdev_uuid)

    @staticmethod
    def _check_uuid(pci_address, mdev_uuid):
        try:
            return checks.mdev_uuid(mdev_uuid)
        except ValueError:
            raise exception.MdevError(mdev_uuid=mdev_uuid,
                                      pci_address=pci_address,
                                      reason="not a UUID")

    def create_mdev(self, pci_address, mdev_type, mdev_uuid):
        """Create the vGPU; creating one that exists already is a no-op.
        Not part of binding: Nova creates a bound ARQ's mdev (module doc).

        :returns: ``{"created": bool}``.
        """
        mdev_uuid = self._check_uuid(pci_address, mdev_uuid)
        if os.path.isdir(self._mdev_dir(mdev_uuid)):
            return {"created": False}
        if pci_address not in self._parents():
            raise exception.MdevError(
                mdev_uuid=mdev_uuid, pci_address=pci_address,
                reason="not an mdev parent (no /sys/class/mdev_bus entry)")
        types = self._types(pci_address)
        if mdev_type not in types:
            raise exception.MdevError(
                mdev_uuid=mdev_uuid, pci_address=pci_address,
                reason=f"mdev type {mdev_type} is not supported here "
                       f"(supported: {', '.join(types) or 'none'})")
        if types[mdev_type][0] < 1:
            raise exception.MdevError(
                mdev_uuid=mdev_uuid, pci_address=pci_address,
                reason=f"no {mdev_type} instance available")
        path = os.path.join(self._types_dir(pci_address), mdev_type,
                            "create")
        self._privileged(path, privsep_mdev.create_mdev,
                         self.conf.agent.sysfs_root, pci_address, mdev_type,
                         mdev_uuid)
        return {"created": True}

    def remove_mdev(self, pci_address, mdev_uuid):
        """Remove the vGPU; removing one that is gone is a no-op. Never
        for a bound ARQ's mdev: libvirt keeps Nova's definition of it.

        :returns: ``{"removed": bool}``.
        """
        mdev_uuid = self._check_uuid(pci_address, mdev_uuid)
        mdev_dir = self._mdev_dir(mdev_uuid)
        if not os.path.isdir(mdev_dir):
            return {"removed": False}
        self._privileged(os.path.join(mdev_dir, "remove"),
                         privsep_mdev.remove_mdev,
                         self.conf.agent.sysfs_root, mdev_uuid)
        return {"removed": True}

    @staticmethod
    def _privileged(path, func, *args):
        """Run a :mod:`cyborg_lite.agent.privsep.mdev` function; its errors
        name the sysfs file, a daemon that cannot start names its helper
        (:class:`~cyborg_lite.agent.exception.HelperNotStarted`)."""
        privsep.start()
        try:
            func(*args)
        except (OSError, ValueError) as exc:
            raise exception.SysfsError(
                path=path, reason=getattr(exc, "strerror", None) or str(exc))
