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

"""Inventory documents for the Placement tests: 4 devices per host, or
the devices a test names (FPGAs, GPUs, SmartNICs)."""

import uuid

from accel_common import inventory


def fpga(node_uuid, index, handles=2, function_id=None, bus=0x5e):
    """An Intel PAC FPGA with one region and ``handles`` VFs."""
    pci = f"0000:{bus + index:02x}:00.0"
    return {
        "id": f"fpga{index}", "type": "FPGA", "vendor_id": "0x8086",
        "product_id": "0x0b30", "vendor": "Intel", "model": "PAC Arria10",
        "pci_address": pci, "program_mode": "dynamic",
        "regions": [{
            "id": "0",
            "rp_uuid": inventory.region_rp_uuid(node_uuid, f"fpga{index}",
                                                "0"),
            "resource_class": "FPGA", "function_id": function_id,
            "attach_handles": [
                {"type": "PCI",
                 "pci_address": f"0000:{bus + index:02x}:00.{h + 1}"}
                for h in range(handles)]}]}


def gpu(node_uuid, index, bus=0xaf):
    """An NVIDIA T4 passed through whole."""
    pci = f"0000:{bus + index:02x}:00.0"
    return {
        "id": f"gpu{index}", "type": "GPU", "vendor_id": "0x10de",
        "product_id": "0x1eb8", "vendor": "NVIDIA", "model": "Tesla T4",
        "pci_address": pci, "program_mode": "single",
        "regions": [{
            "id": "0",
            "rp_uuid": inventory.region_rp_uuid(node_uuid, f"gpu{index}", "0"),
            "resource_class": "PGPU", "function_id": None,
            "attach_handles": [{"type": "PCI", "pci_address": pci}]}]}


def nic(node_uuid, index, vfs=4, physnet="physnet1", bus=0x3b,
        regions=None):
    """An Intel X710 SmartNIC: one region per port (``regions``: ``{region
    id: physnet}``, default one port ``"0"`` on ``physnet``), each with
    ``vfs`` virtual functions on that physical network (``vfs=0``: the
    port itself is the handle)."""
    pci = f"0000:{bus + index:02x}:00.0"
    regions = regions or {"0": physnet}
    device_id = f"nic{index}"

    def handles(port, net):
        addresses = ([pci] if not vfs else
                     [f"0000:{bus + index:02x}:{2 + 8 * port + h // 8:02x}."
                      f"{h % 8}" for h in range(vfs)])
        return [dict({"type": "PCI", "pci_address": address},
                     **({"physical_network": net} if net else {}))
                for address in addresses]

    return {
        "id": device_id, "type": "NIC", "vendor_id": "0x8086",
        "product_id": "0x1572", "vendor": "Intel", "model": "X710",
        "pci_address": pci, "program_mode": "single",
        "regions": [{
            "id": region_id,
            "rp_uuid": inventory.region_rp_uuid(node_uuid, device_id,
                                                region_id),
            "resource_class": "CUSTOM_NIC", "function_id": None,
            "attach_handles": handles(port, net)}
            for port, (region_id, net) in enumerate(regions.items())]}


def document(host, node_uuid=None, devices=None):
    """A host's document: 2 FPGAs and 2 GPUs unless ``devices`` is given."""
    node_uuid = node_uuid or str(uuid.uuid4())
    if devices is None:
        devices = [fpga(node_uuid, 0), fpga(node_uuid, 1),
                   gpu(node_uuid, 0), gpu(node_uuid, 1)]
    return {"schema_version": "1.0", "node_uuid": node_uuid, "host": host,
            "refreshed_at": "2026-11-21T10:00:00Z", "devices": devices}
