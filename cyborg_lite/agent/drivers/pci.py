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

"""``pci``: whole PCI functions handed over as they are (passthrough).

The functions are those of ``[pci] device_spec`` (Nova's syntax, see
:mod:`cyborg_lite.agent.drivers.pci_spec`), read from
``/sys/bus/pci/devices``: whole GPUs, SR-IOV VFs of NICs, QAT VFs. Each
device is the PF (or stand-alone function) Ironic knows by PCI address,
with one region ``0`` whose attach handles are its matching VFs, or the
function itself when it has no VF enabled. A NIC handle carries the
physical network of its spec, else the one ``[pci]
physical_device_mappings`` gives its PF's netdev (Neutron's SR-IOV agent
syntax); a NIC handle without one is not offered (Nova needs it to bind
the port).

A function the host uses is never offered, each refusal one log line
(:meth:`PciDriver._in_use` says what counts and why). Nothing to program:
the region runs no function.
"""

import os

from oslo_log import log as logging

from cyborg_lite.agent import exception
from cyborg_lite.agent.drivers import _host
from cyborg_lite.agent.drivers import base
from cyborg_lite.agent.drivers import pci_spec

LOG = logging.getLogger(__name__)

#: Linux ``IFF_UP``: the interface is administratively up.
IFF_UP = 0x1
#: Drivers that only hold a function for a guest.
PASSTHROUGH_DRIVERS = ("vfio-pci", "pci-stub")
INTEL_VENDOR = "0x8086"


def device_type(pci_class, vendor_id):
    """Cyborg device type of a function from its PCI class: display (0x03)
    GPU, network (0x02) NIC, Intel co-processor (0x0b40) QAT, else PCI."""
    pci_class = (pci_class or "").lower()
    if pci_class.startswith("0x03"):
        return "GPU"
    if pci_class.startswith("0x02"):
        return "NIC"
    if pci_class.startswith("0x0b40") and vendor_id.lower() == INTEL_VENDOR:
        return "QAT"
    return "PCI"


class PciDriver(base.AcceleratorDriver):
    """Generic PCI passthrough by device spec; no programming."""

    name = "pci"

    def __init__(self, conf):
        super().__init__(conf)
        self.sysfs = _host.Sysfs(conf.agent.sysfs_root)
        self._noted = set()
        self._noting = set()

    def _note(self, message, level=logging.WARNING):
        """Log a problem once while it lasts: at ``level`` the first
        discovery that meets it, debug after (discovery runs on every
        refresh)."""
        self._noting.add(message)
        LOG.log(logging.DEBUG if message in self._noted else level,
                "%s", message)

    def _read_host_file(self, *parts):
        path = os.path.join(self.conf.agent.sysfs_root, *parts)
        try:
            with open(path) as handle:
                return handle.read().splitlines()
        except OSError:
            return []

    def _block_use(self, pci_address):
        """Why a block device below the function is in use, or None."""
        names = self.sysfs.block_devices(pci_address)
        if not names:
            return None
        mounts = {}
        for line in self._read_host_file("proc", "mounts"):
            fields = line.split()
            if len(fields) > 1:
                mounts.setdefault(fields[0], fields[1])
        swaps = {line.split()[0] for line in
                 self._read_host_file("proc", "swaps")[1:] if line.strip()}
        for name in names:
            source = f"/dev/{name}"
            if source in mounts:
                return (f"its block device {name} is mounted on "
                        f"{mounts[source]}")
            if source in swaps:
                return f"its block device {name} is used as swap"
            try:
                holders = os.listdir(self.sysfs.path("class", "block", name,
                                                     "holders"))
            except OSError:
                holders = []
            if holders:
                return (f"its block device {name} is held by "
                        f"{', '.join(sorted(holders))} (LVM, RAID or "
                        f"device-mapper)")
        return None

    def _host_use(self, pci_address):
        """Why the host itself uses a function, or None (see _in_use)."""
        pci_class = self.sysfs.pci_attr(pci_address, "class", default="")
        driver = self.sysfs.driver(pci_address)
        if self.sysfs.pci_attr(pci_address, "boot_vga") == "1":
            return "it is the boot VGA device (the host's console runs on it)"
        if pci_class.lower().startswith("0x03") and driver not in (
                None,) + PASSTHROUGH_DRIVERS:
            return (f"it is a GPU bound to the host driver {driver}; bind "
                    f"it to vfio-pci to hand it over")
        for netdev in self.sysfs.netdevs(pci_address):
            flags = self.sysfs.pci_attr(pci_address, "net", netdev, "flags",
                                        default="0x0")
            operstate = self.sysfs.pci_attr(pci_address, "net", netdev,
                                            "operstate")
            try:
                up = int(flags, 16) & IFF_UP
            except ValueError:
                up = False
            if up or operstate == "up":
                return (f"its netdev {netdev} is up (the host configured "
                        f"it; its traffic would stop)")
        return self._block_use(pci_address)

    def _in_use(self, pci_address):
        """Why a function must not be handed over, or None.

        Refused: a PCI bridge; a function without an IOMMU group (vfio-pci
        cannot isolate it: the IOMMU is off); the boot VGA device (the
        console, and unbinding it hangs many hosts); a GPU bound to a host
        driver rather than vfio-pci (nvidia, nouveau, amdgpu: host CUDA,
        display or vGPU work would be cut off, and unbinding the NVIDIA
        driver under load blocks); a function with a netdev that is up
        (the host configured it, e.g. an address or a bond member); a
        function whose disk is mounted, swap or held by LVM/RAID; and a
        function sharing its IOMMU group with any of those (vfio takes
        the whole group). A VF on its host VF driver (iavf, mlx5_core,
        4xxxvf) with its netdev down is not in use: Nova's libvirt driver
        detaches it from that driver when it attaches it.
        """
        pci_class = self.sysfs.pci_attr(pci_address, "class", default="")
        if pci_class.lower().startswith("0x06"):
            return "it is a PCI bridge"
        group = self.sysfs.iommu_group(pci_address)
        if group is None:
            return ("it has no IOMMU group (enable the IOMMU, e.g. "
                    "intel_iommu=on, for vfio-pci to take it)")
        reason = self._host_use(pci_address)
        if reason:
            return reason
        for peer in self.sysfs.iommu_group_members(group):
            if peer == pci_address:
                continue
            reason = self._host_use(peer)
            if reason:
                return (f"it shares IOMMU group {group} with {peer}, which "
                        f"the host uses: {reason}")
        return None

    def _specs(self):
        specs, errors = pci_spec.parse_device_specs(
            self.conf.pci.device_spec)
        mapping, more = pci_spec.parse_physical_device_mappings(
            self.conf.pci.physical_device_mappings)
        for message in errors + more:
            self._note(message)
        return specs, mapping

    def _resolve(self, specs, functions):
        """Specs with each ``devname`` turned into its function's address;
        a devname no function has is noted and dropped."""
        by_netdev = {netdev: bdf for bdf in functions
                     for netdev in self.sysfs.netdevs(bdf)}
        resolved = []
        for spec in specs:
            if spec.devname is None:
                resolved.append(spec)
            elif spec.devname in by_netdev:
                resolved.append(spec.resolved(by_netdev[spec.devname]))
            else:
                self._note(f"[pci] device_spec {spec} matches nothing: no "
                           f"PCI function has the netdev {spec.devname}")
        return resolved

    def _matches(self, specs, functions):
        """``{bdf: (spec, physfn)}`` of the functions some spec matches,
        the first spec winning; a spec that matches nothing is noted."""
        info = {bdf: (self.sysfs.pci_ids(bdf),
                      self.sysfs.physical_function(bdf))
                for bdf in functions}
        matched = {}
        for spec in specs:
            hits = [bdf for bdf, ((vendor, product), physfn) in info.items()
                    if spec.match(bdf, vendor, product, physfn)]
            if not hits:
                self._note(f"[pci] device_spec {spec} matches no PCI "
                           f"function on this host")
            for bdf in hits:
                matched.setdefault(bdf, (spec, info[bdf][1]))
        return matched

    def _physnet(self, spec, owner, mapping):
        if spec.physical_network:
            return spec.physical_network
        for netdev in self.sysfs.netdevs(owner):
            if netdev in mapping:
                return mapping[netdev]
        return None

    def _device(self, owner, spec):
        vendor_id, product_id = self.sysfs.pci_ids(owner)
        pci_class = self.sysfs.pci_attr(owner, "class", default="")
        region = {"id": "0", "function_id": None, "state": base.READY,
                  "attach_handles": []}
        if spec.resource_class:
            region["resource_class"] = spec.resource_class
        if spec.traits:
            region["traits"] = list(spec.traits)
        return {"type": spec.device_type or device_type(pci_class,
                                                        vendor_id),
                "vendor_id": vendor_id, "product_id": product_id,
                "pci_address": owner, "program_mode": "single",
                "regions": [region]}

    def _note_pf(self, bdf, spec, vfs, matched):
        """A PF with VFs enabled runs them: it is never handed over whole.
        Expected (INFO) when its VFs match; a warning when none does."""
        reason = (f"PCI function {bdf} matches [pci] device_spec {spec} "
                  f"but is not handed over: it is a PF with {len(vfs)} "
                  f"VF(s) enabled")
        if any(vf in matched for vf in vfs):
            self._note(f"{reason}; its VFs are handed over instead",
                       level=logging.INFO)
        else:
            self._note(f"{reason} and no spec matches its VFs (match the "
                       f"VFs' product_id, or set sriov_numvfs to 0 to hand "
                       f"over the whole PF)")

    def discover(self):
        """The matching functions as PCI attach handles, grouped by PF.

        Never raises for a bad spec or a function in use: each is one log
        line and no handle.
        """
        self._noting = set()
        specs, mapping = self._specs()
        functions = self.sysfs.pci_functions()
        matched = self._matches(self._resolve(specs, functions), functions)
        devices, no_physnet = {}, {}
        for bdf, (spec, physfn) in sorted(matched.items()):
            vfs = self.sysfs.virtual_functions(bdf)
            if physfn is None and vfs:
                self._note_pf(bdf, spec, vfs, matched)
                continue
            reason = self._in_use(bdf)
            if reason:
                self._note(f"PCI function {bdf} matches [pci] device_spec "
                           f"{spec} but is not handed over: {reason}")
                continue
            owner = physfn or bdf
            device = devices.get(owner) or self._device(owner, spec)
            handle = {"type": "PCI", "pci_address": bdf}
            physnet = self._physnet(spec, owner, mapping)
            if physnet:
                handle["physical_network"] = physnet
            elif device["type"] == "NIC":
                no_physnet.setdefault(owner, []).append(bdf)
                continue
            devices[owner] = device
            device["regions"][0]["attach_handles"].append(handle)
        for owner, vfs in sorted(no_physnet.items()):
            netdevs = ", ".join(self.sysfs.netdevs(owner)) or "none"
            self._note(f"PCI function(s) {', '.join(vfs)} of NIC {owner} "
                       f"match [pci] device_spec but are not handed over: "
                       f"no physical network (set physical_network in the "
                       f"spec, or map the PF's netdev ({netdevs}) in [pci] "
                       f"physical_device_mappings)")
        self._noted = self._noting
        return [devices[owner] for owner in sorted(devices)]

    def current_function(self, region):
        """Nothing is ever loaded: ``None``, ready, for a function that
        exists."""
        if region.region_id != "0" or not os.path.isdir(
                self.sysfs.pci_device(region.pci_address)):
            raise exception.RegionNotFound(pci_address=region.pci_address,
                                           region_id=region.region_id)
        return base.reading(None)
