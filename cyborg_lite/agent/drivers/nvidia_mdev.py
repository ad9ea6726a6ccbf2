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
ABI). On SR-IOV GPUs (Ampere and later) the parents are VFs: they are
reported under their PF, the address Ironic knows the card by, and VFs are
never offered as whole GPUs (cubecos#1262).
"""

import os
import uuid

from cyborg_lite.agent import exception
from cyborg_lite.agent.drivers import _host
from cyborg_lite.agent.drivers import base


class NvidiaMdevDriver(base.AcceleratorDriver):
    """NVIDIA GPUs carved into vGPUs; no programming."""

    name = "nvidia_mdev"

    def __init__(self, conf):
        super().__init__(conf)
        self.sysfs = _host.Sysfs(conf.agent.sysfs_root)

    def _parents(self):
        """mdev parent BDF -> its PF BDF (itself unless it is a VF)."""
        bus = self.sysfs.path("class", "mdev_bus")
        try:
            names = sorted(os.listdir(bus))
        except FileNotFoundError:
            return {}
        parents = {}
        for name in names:
            physfn = self.sysfs.link_name(os.path.join(bus, name, "physfn"))
            parents[name] = physfn or name
        return parents

    def _types_dir(self, parent):
        return self.sysfs.path("class", "mdev_bus", parent,
                               "mdev_supported_types")

    def _types(self, parent):
        """mdev type -> (available instances, created instances)."""
        types = {}
        base_dir = self._types_dir(parent)
        try:
            names = sorted(os.listdir(base_dir))
        except FileNotFoundError:
            return types
        for name in names:
            type_dir = os.path.join(base_dir, name)
            available = int(self.sysfs.read(
                os.path.join(type_dir, "available_instances"), "0") or 0)
            try:
                created = len(os.listdir(os.path.join(type_dir, "devices")))
            except FileNotFoundError:
                created = 0
            types[name] = (available, created)
        return types

    def discover(self):
        """GPUs with one MDEV attach handle per possible vGPU instance."""
        by_pf = {}
        for parent, pf in self._parents().items():
            by_pf.setdefault(pf, []).append(parent)
        devices = []
        for pf, parents in sorted(by_pf.items()):
            vendor_id, product_id = self.sysfs.pci_ids(pf)
            handles = []
            for parent in sorted(parents):
                for mdev_type, (available, created) in self._types(
                        parent).items():
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
            return str(uuid.UUID(str(mdev_uuid)))
        except ValueError:
            raise exception.MdevError(mdev_uuid=mdev_uuid,
                                      pci_address=pci_address,
                                      reason="not a UUID")

    def create_mdev(self, pci_address, mdev_type, mdev_uuid):
        """Create the vGPU; creating one that exists already is a no-op.

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
        self.sysfs.write(os.path.join(self._types_dir(pci_address),
                                      mdev_type, "create"), mdev_uuid)
        return {"created": True}

    def remove_mdev(self, pci_address, mdev_uuid):
        """Remove the vGPU; removing one that is gone is a no-op.

        :returns: ``{"removed": bool}``.
        """
        mdev_uuid = self._check_uuid(pci_address, mdev_uuid)
        mdev_dir = self._mdev_dir(mdev_uuid)
        if not os.path.isdir(mdev_dir):
            return {"removed": False}
        self.sysfs.write(os.path.join(mdev_dir, "remove"), "1")
        return {"removed": True}
