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


"""A NIC with SR-IOV: NetworkAdapter, NetworkDeviceFunctions and the PCIe
functions of its PFs and VFs, each parsed with sushy's own classes."""

import json

import pytest
import requests
import sushy
from sushy.resources.chassis import chassis as sushy_chassis

from accel_tools.embedded.images import make_firmware_image
from accel_tools.emulator import devices

AUTH = ("admin", "secret")
CHASSIS = "/redfish/v1/Chassis/1"
NIC = CHASSIS + "/NetworkAdapters/NIC0"
SIMPLE_UPDATE = "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate"

#: A dual-port ConnectX-5 (PF 15b3:1017, VF 15b3:1018), two VFs enabled per PF.
CONNECTX5 = {"id": "NIC0", "type": "NIC", "manufacturer": "Mellanox Technologies",
             "model": "ConnectX-5 EN 25GbE", "vendor_id": "0x15b3",
             "device_id": "0x1017", "vf_device_id": "0x1018",
             "pci_address": "0000:3b:00.0", "firmware_version": "16.35.2000",
             "ports": 2, "max_vfs": 8, "vfs": 2}


@pytest.fixture
def nic_emulator(start_emulator, tmp_path):
    state_file = tmp_path / "bmc.json"
    state_file.write_text(json.dumps({"systems": {"1": {"devices": [
        {"id": "CPU0", "type": "CPU"}, CONNECTX5]}}}))
    return start_emulator(state_file=state_file)


def _chassis(emulator):
    conn = emulator.sushy()
    return sushy_chassis.Chassis(conn._conn, CHASSIS, redfish_version="1.11.0",
                                 root=conn)


def test_network_adapter_parses_with_sushy(nic_emulator):
    adapters = _chassis(nic_emulator).network_adapters.get_members()
    assert [a.identity for a in adapters] == ["NIC0"]
    adapter = adapters[0]
    assert (adapter.manufacturer, adapter.model) == ("Mellanox Technologies",
                                                     "ConnectX-5 EN 25GbE")
    assert adapter.controllers[0].firmware_package_version == "16.35.2000"
    offload = adapter.json["Controllers"][0]["ControllerCapabilities"][
        "VirtualizationOffload"]
    assert offload["SRIOV"]["SRIOVEnabled"] is True
    assert offload["VirtualFunction"]["DeviceMaxCount"] == 16
    assert offload["VirtualFunction"]["NetworkPortMaxCount"] == 8
    assert adapter.json["Controllers"][0]["Links"]["PCIeDevices"] == [
        {"@odata.id": CHASSIS + "/PCIeDevices/NIC0"}]


def test_device_functions_link_their_physical_functions(nic_emulator):
    adapter = _chassis(nic_emulator).network_adapters.get_members()[0]
    functions = {f.identity: f for f in adapter.network_device_functions.get_members()}
    assert set(functions) == {"0", "1"}
    for pf_id, function in functions.items():
        assert function.type == sushy.resources.system.network.constants.\
            NetworkDeviceTechnology.ETHERNET
        assert function.max_virtual_functions == 8
        assert function.json["VirtualFunctionsEnabled"] is True
        assert function.json["Links"]["PCIeFunction"] == {
            "@odata.id": CHASSIS + "/PCIeDevices/NIC0/PCIeFunctions/" + pf_id}
        mac = function.ethernet.mac_address
        assert mac == function.ethernet.permanent_mac_address
        # NOTE(emulator): locally administered, unicast.
        assert int(mac.split(":")[0], 16) & 0x03 == 0x02
    assert functions["0"].ethernet.mac_address != functions["1"].ethernet.mac_address


def test_pcie_functions_are_the_pfs_and_their_enabled_vfs(nic_emulator):
    system = nic_emulator.sushy().get_system("/redfish/v1/Systems/1")
    (device,) = system.pcie_devices.get_members()
    assert device.identity == "NIC0"
    found = sorted((f.function_id, f.function_type, f.device_id, f.vendor_id,
                    f.device_class, f.bus_number, f.device_number, f.function_number)
                   for f in device.pcie_functions.get_members())
    pf, vf = sushy.FunctionType.PHYSICAL, sushy.FunctionType.VIRTUAL
    net = sushy.resources.system.constants.DeviceClass.NETWORK_CONTROLLER
    assert found == [
        (0, pf, "0x1017", "0x15b3", net, "0x3b", "0x00", "0x00"),
        (1, pf, "0x1017", "0x15b3", net, "0x3b", "0x00", "0x01"),
        (2, vf, "0x1018", "0x15b3", net, "0x3b", "0x00", "0x02"),
        (3, vf, "0x1018", "0x15b3", net, "0x3b", "0x00", "0x03"),
        (10, vf, "0x1018", "0x15b3", net, "0x3b", "0x01", "0x02"),
        (11, vf, "0x1018", "0x15b3", net, "0x3b", "0x01", "0x03")]
    links = {f.function_id: f.json["Links"] for f in device.pcie_functions.get_members()}
    assert links[1]["NetworkDeviceFunctions"] == [
        {"@odata.id": NIC + "/NetworkDeviceFunctions/1"}]
    assert "NetworkDeviceFunctions" not in links[10]
    assert not any("Processors" in link for link in links.values())


def test_nic_is_no_processor(nic_emulator):
    system = nic_emulator.sushy().get_system("/redfish/v1/Systems/1")
    assert [p.identity for p in system.processors.get_members()] == ["CPU0"]
    rsp = requests.get(nic_emulator.url + "/redfish/v1/Systems/1/Processors/NIC0", auth=AUTH)
    assert rsp.status_code == 404
    rsp = requests.get(nic_emulator.url + "/redfish/v1/Chassis/1/NetworkAdapters/CPU0",
                       auth=AUTH)
    assert rsp.status_code == 404


def test_without_vfs_enabled_only_the_pfs_are_served(start_emulator):
    emulator = start_emulator()
    emulator.state.set_devices("1", [dict(CONNECTX5, vfs=0)])
    adapter = _chassis(emulator).network_adapters.get_members()[0]
    functions = adapter.network_device_functions.get_members()
    assert [f.json["VirtualFunctionsEnabled"] for f in functions] == [False, False]
    device = emulator.sushy().get_system("/redfish/v1/Systems/1").pcie_devices.get_members()[0]
    assert sorted(f.function_id for f in device.pcie_functions.get_members()) == [0, 1]


def test_firmware_of_a_nic_is_tied_to_its_adapter_and_updated(nic_emulator, tmp_path):
    update = nic_emulator.sushy().get_update_service()
    member = [m for m in update.firmware_inventory.get_members() if m.identity == "1-NIC0"][0]
    assert member.version == "16.35.2000"
    assert member.json["RelatedItem"] == [{"@odata.id": NIC}]
    path, _ = make_firmware_image(tmp_path, "16.35.4030", device_type="NIC")
    rsp = requests.post(nic_emulator.url + SIMPLE_UPDATE, auth=AUTH,
                        json={"ImageURI": path.as_uri(), "Targets": [NIC]})
    assert rsp.status_code == 202
    assert json.loads(rsp.json()["Payload"]["JsonBody"])["Targets"] == [NIC]
    rsp = requests.post(nic_emulator.url + SIMPLE_UPDATE, auth=AUTH,
                        json={"ImageURI": path.as_uri(),
                              "Targets": ["/redfish/v1/Systems/1/Processors/NIC0"]})
    assert rsp.status_code == 400


@pytest.mark.parametrize("change, field", [
    ({"max_vfs": -1}, "max_vfs"),
    ({"max_vfs": 200}, "max_vfs"),
    ({"vfs": 9}, "vfs"),
    ({"ports": 0}, "ports"),
    ({"ports": 3, "max_vfs": 100}, "routing ids"),
    ({"vf_device_id": "1018"}, "vf_device_id"),
    ({"functions": [{"id": 1, "type": "Virtual"}]}, "Physical function"),
    ({"functions": [{"id": 0}, {"id": 2, "type": "Virtual", "physical_function": 1}]},
     "physical_function"),
    ({"functions": [{"id": 0}, {"id": 0}]}, "unique"),
])
def test_bad_nic_is_refused_naming_the_field(change, field):
    with pytest.raises(ValueError, match=field):
        devices.normalize_device(dict(CONNECTX5, **change))


def test_bad_nic_over_http_is_a_400_naming_the_field(nic_emulator):
    rsp = requests.put(nic_emulator.url + "/emulator/systems/1/devices",
                       json=[dict(CONNECTX5, vfs=20)])
    assert rsp.status_code == 400
    assert "vfs" in rsp.json()["error"]
