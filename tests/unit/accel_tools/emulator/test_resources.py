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


"""Every document the emulator serves parses with sushy, with the values
the Ironic plugin reads (Processors, FPGA slots, PCIe, firmware inventory)."""

import requests
import sushy

FPGA = "/redfish/v1/Systems/1/Processors/FPGA0"


def test_root_system_manager_chassis_parse_with_sushy(emulator):
    conn = emulator.sushy()
    assert conn.redfish_version == "1.11.0"
    system = conn.get_system()
    assert system.identity == "1"
    assert system.power_state == sushy.PowerState.ON
    assert system.bios_version
    assert system.boot.mode == sushy.BootSourceOverrideMode.UEFI
    assert sushy.ResetType.FORCE_OFF in system.get_allowed_reset_system_values()
    manager = system.managers[0]
    assert manager.identity == "1" and manager.firmware_version == "1.45.455"
    chassis = conn.get_chassis()
    assert chassis.identity == "1"


def test_processors_have_types_and_fpga_object(emulator):
    system = emulator.sushy().get_system("/redfish/v1/Systems/1")
    procs = {p.identity: p for p in system.processors.get_members()}
    assert {k: p.processor_type for k, p in procs.items()} == {
        "CPU0": sushy.ProcessorType.CPU, "FPGA0": sushy.ProcessorType.FPGA,
        "GPU0": sushy.ProcessorType.GPU}
    fpga = procs["FPGA0"].json
    assert fpga["@odata.type"].startswith("#Processor.v1_")
    assert fpga["Manufacturer"] == "Intel" and fpga["FirmwareVersion"] == "2.0.1"
    assert fpga["FPGA"]["FirmwareVersion"] == "2.0.1"
    slots = fpga["FPGA"]["ReconfigurationSlots"]
    assert [s["SlotId"] for s in slots] == ["0", "1"]
    assert all(s["UUID"] and s["ProgrammableFromHost"] for s in slots)
    # Nothing is loaded yet: no slot links to an AccelerationFunction.
    assert not any("AccelerationFunction" in s for s in slots)
    assert fpga["Links"]["PCIeDevice"]["@odata.id"].endswith("/PCIeDevices/FPGA0")
    assert procs["GPU0"].json["FirmwareVersion"] == "90.04.38.00.03"
    assert "FPGA" not in procs["GPU0"].json


def test_pcie_devices_and_functions_parse_with_sushy(emulator):
    system = emulator.sushy().get_system("/redfish/v1/Systems/1")
    found = {}
    for dev in system.pcie_devices.get_members():
        for fn in dev.pcie_functions.get_members():
            found[dev.identity] = (dev.manufacturer, fn.function_id, fn.function_type,
                                   fn.vendor_id, fn.device_id, fn.segment_number,
                                   fn.bus_number, fn.device_number, fn.function_number)
    assert found == {
        "FPGA0": ("Intel", 0, sushy.FunctionType.PHYSICAL, "0x8086", "0x0b30",
                  "0x0000", "0x5e", "0x00", "0x00"),
        "GPU0": ("NVIDIA", 0, sushy.FunctionType.PHYSICAL, "0x10de", "0x1eb8",
                 "0x0000", "0xaf", "0x00", "0x00"),
    }


def test_firmware_inventory_lists_accelerators_with_related_item(emulator):
    update = emulator.sushy().get_update_service()
    assert update.service_enabled
    members = {m.identity: m for m in update.firmware_inventory.get_members()}
    assert {"1-FPGA0", "1-GPU0", "1-BIOS", "BMC"} == set(members)
    assert members["1-FPGA0"].version == "2.0.1"
    assert members["1-FPGA0"].updateable
    assert members["1-FPGA0"].json["RelatedItem"] == [{"@odata.id": FPGA}]
    assert members["1-GPU0"].version == "90.04.38.00.03"


def test_device_override_without_accelerators(emulator):
    emulator.state.set_devices("1", [{"id": "CPU0", "type": "CPU"}])
    conn = emulator.sushy()
    system = conn.get_system("/redfish/v1/Systems/1")
    assert [p.identity for p in system.processors.get_members()] == ["CPU0"]
    assert system.pcie_devices.get_members() == []
    inventory = conn.get_update_service().firmware_inventory
    assert {m.identity for m in inventory.get_members()} == {"1-BIOS", "BMC"}


def test_device_override_with_several_fpgas(start_emulator, tmp_path):
    devices = [{"id": "FPGA%d" % n, "type": "FPGA", "vendor_id": "0x8086",
                "device_id": "0x0b30", "pci_address": "0000:%02x:00.0" % (0x5e + n),
                "slots": [{"id": "0", "function_id": "f-%d" % n}],
                "functions": [{"id": 0}, {"id": 1}, {"id": 2}]}
               for n in range(2)]
    emulator = start_emulator(systems=2)
    emulator.state.set_devices("2", devices)
    system = emulator.sushy().get_system("/redfish/v1/Systems/2")
    procs = {p.identity: p.json for p in system.processors.get_members()}
    assert set(procs) == {"FPGA0", "FPGA1"}
    assert procs["FPGA1"]["FPGA"]["PCIeVirtualFunctions"] == 2
    dev = [d for d in system.pcie_devices.get_members() if d.identity == "FPGA1"][0]
    fns = sorted((f.function_id, f.function_type, f.bus_number, f.function_number)
                 for f in dev.pcie_functions.get_members())
    assert fns == [(0, sushy.FunctionType.PHYSICAL, "0x5f", "0x00"),
                   (1, sushy.FunctionType.VIRTUAL, "0x5f", "0x01"),
                   (2, sushy.FunctionType.VIRTUAL, "0x5f", "0x02")]
    # System 1 keeps the default inventory.
    assert len(emulator.sushy().get_system("/redfish/v1/Systems/1")
               .processors.get_members()) == 3


def test_bad_device_override_is_rejected_naming_the_field(emulator):
    rsp = requests.put(emulator.url + "/emulator/systems/1/devices",
                       json=[{"id": "FPGA0", "type": "FPGA", "vendor_id": "8086",
                              "device_id": "0x0b30", "pci_address": "0000:5e:00.0"}])
    assert rsp.status_code == 400
    assert "vendor_id" in rsp.json()["error"]


def test_unknown_resource_is_a_redfish_404(emulator):
    rsp = requests.get(emulator.url + "/redfish/v1/Systems/9", auth=("admin", "secret"))
    assert rsp.status_code == 404
    assert rsp.json()["error"]["@Message.ExtendedInfo"][0]["MessageId"].endswith(
        "ResourceMissingAtURI")
    rsp = requests.delete(emulator.url + "/redfish/v1/Systems/1", auth=("admin", "secret"))
    assert rsp.status_code == 405 and "GET" in rsp.headers["Allow"]


def test_power_reset_and_boot_override(emulator):
    system = emulator.sushy().get_system("/redfish/v1/Systems/1")
    system.reset_system(sushy.ResetType.FORCE_OFF)
    system = emulator.sushy().get_system("/redfish/v1/Systems/1")
    assert system.power_state == sushy.PowerState.OFF
    system.reset_system(sushy.ResetType.PUSH_POWER_BUTTON)
    system.set_system_boot_options(sushy.BootSource.PXE,
                                   enabled=sushy.BootSourceOverrideEnabled.ONCE)
    system = emulator.sushy().get_system("/redfish/v1/Systems/1")
    assert system.power_state == sushy.PowerState.ON
    assert system.boot.target == sushy.BootSource.PXE
    assert system.boot.enabled == sushy.BootSourceOverrideEnabled.ONCE
    rsp = requests.patch(emulator.url + "/redfish/v1/Systems/1", auth=("admin", "secret"),
                         json={"Boot": {"BootSourceOverrideTarget": "Floppy"}})
    assert rsp.status_code == 400
    assert "Floppy" in rsp.json()["error"]["message"]
