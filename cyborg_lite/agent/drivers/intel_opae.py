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

"""``intel_opae``: Intel FPGAs (PAC, N3000, ...) through OPAE.

Discovery reads sysfs. Two kernel drivers exist and both are read:

- upstream DFL: ``/sys/class/fpga_region/region*/`` whose ``device`` link is
  the PCI PF, with one ``dfl-port.N/afu_id`` per reconfigurable region;
- the older out-of-tree intel-fpga driver: ``/sys/class/fpga/
  intel-fpga-dev.*/`` with ``intel-fpga-port.N/afu_id``.

Programming runs ``fpgaconf --bus B --device D --function F image.gbs``
(plus ``--segment S`` off PCI segment 0) in the privsep daemon and reads
``afu_id`` back. Attach
handles are the VFs the PF has enabled (port N is assigned to VF N), else the
PF itself.

With SR-IOV (the kernel's Documentation/fpga/dfl.rst, "FPGA virtualization"),
the FME stays on the PF and a port released to a VF is enumerated under the
VF: that port is a region of the PF's card, with the VF as its handle; the VF
is never a card of its own.
"""

import glob
import os
import re

from cyborg_lite.agent import exception
from cyborg_lite.agent.drivers import _host
from cyborg_lite.agent.drivers import base
from cyborg_lite.agent.privsep import checks
from cyborg_lite.agent.privsep import fpga as privsep_fpga

# (class directory, device glob, port prefix)
_LAYOUTS = (
    (("class", "fpga_region"), "region*", "dfl-port."),
    (("class", "fpga"), "intel-fpga-dev.*", "intel-fpga-port."),
)


def afu_id_to_uuid(afu_id):
    """OPAE prints AFU ids as 32 hex digits; Glance images and traits use
    the dashed UUID form. Anything else is returned unchanged."""
    text = afu_id.strip().lower().replace("-", "")
    if re.match(r"^[0-9a-f]{32}$", text):
        return (f"{text[0:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-"
                f"{text[20:32]}")
    return afu_id.strip()


def _port_order(index):
    return (0, int(index)) if index.isdigit() else (1, index)


class IntelOpaeDriver(base.AcceleratorDriver):
    """Intel FPGAs: sysfs discovery, ``fpgaconf`` programming."""

    name = "intel_opae"

    def __init__(self, conf):
        super().__init__(conf)
        self.sysfs = _host.Sysfs(conf.agent.sysfs_root)

    def _devices(self):
        """PF PCI address -> list of (port index, port directory, VF the
        port was released to or None)."""
        found = {}
        for class_parts, pattern, prefix in _LAYOUTS:
            for device_dir in sorted(glob.glob(
                    os.path.join(self.sysfs.path(*class_parts), pattern))):
                pci_address = self.sysfs.link_name(
                    os.path.join(device_dir, "device"))
                if not pci_address or not _host.PCI_ADDRESS.match(
                        pci_address):
                    continue
                pf = self.sysfs.physical_function(pci_address)
                released_to = pci_address if pf else None
                for port_dir in sorted(glob.glob(
                        os.path.join(device_dir, prefix + "*"))):
                    index = port_dir.rsplit(".", 1)[-1]
                    found.setdefault(pf or pci_address, []).append(
                        (index, port_dir, released_to))
        return {pf: sorted(ports, key=lambda p: _port_order(p[0]))
                for pf, ports in found.items()}

    def discover(self):
        """Intel FPGAs with one region per port."""
        devices = []
        for pci_address, ports in sorted(self._devices().items()):
            vendor_id, product_id = self.sysfs.pci_ids(pci_address)
            vfs = self.sysfs.virtual_functions(pci_address)
            regions = []
            for position, (index, port_dir, released_to) in enumerate(ports):
                if released_to:
                    handles = [{"type": "PCI", "pci_address": released_to}]
                elif position < len(vfs):
                    handles = [{"type": "PCI", "pci_address": vfs[position]}]
                else:
                    handles = [{"type": "PCI", "pci_address": pci_address}]
                afu = self.sysfs.read(os.path.join(port_dir, "afu_id"))
                regions.append({
                    "id": index,
                    "function_id": afu_id_to_uuid(afu) if afu else None,
                    "state": base.READY,
                    "attach_handles": handles,
                })
            devices.append({
                "type": "FPGA", "vendor": "Intel", "vendor_id": vendor_id,
                "product_id": product_id, "pci_address": pci_address,
                "program_mode": "dynamic", "regions": regions,
            })
        return devices

    def _port_dir(self, region):
        for index, port_dir, _ in self._devices().get(region.pci_address,
                                                      []):
            if index == region.region_id:
                return port_dir
        raise exception.RegionNotFound(pci_address=region.pci_address,
                                       region_id=region.region_id)

    def current_function(self, region):
        """The port's ``afu_id``, as a UUID."""
        path = os.path.join(self._port_dir(region), "afu_id")
        afu = self.sysfs.read(path)
        if not afu:
            return base.reading(None, base.ERROR, f"{path} is unreadable")
        return base.reading(afu_id_to_uuid(afu))

    def program(self, region, image_path, function_id):
        """``fpgaconf`` the image onto the device's PR region (privileged,
        :func:`cyborg_lite.agent.privsep.fpga.fpgaconf`)."""
        self._port_dir(region)
        pci_address = _host.check("fpgaconf", checks.pci_address,
                                  region.pci_address)
        image_dirs = _host.image_dirs(self.conf)
        image = _host.check("fpgaconf", checks.image_path, image_path,
                            image_dirs)
        _host.privileged(
            f"{self.conf.agent.fpgaconf_path} {pci_address} {image}",
            privsep_fpga.fpgaconf, self.conf.agent.fpgaconf_path,
            pci_address, image, image_dirs, self.conf.agent.tool_timeout)
