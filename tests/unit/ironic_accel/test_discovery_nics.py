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

"""SR-IOV NICs read from their NetworkAdapters (tests/unit/ironic_accel/data
/bmc_nic.json, recorded from the BMC emulator: a dual-port ConnectX-5, PFs
15b3:1017 at 0000:3b:00.0/.1 with two VFs 15b3:1018 each, next to a GPU)."""

import copy

import pytest

from accel_common import inventory
from ironic_accel import discovery
from ironic_accel.redfish import inventory as redfish_inventory
from tests.unit.ironic_accel import recorded_bmc as rbmc

ADAPTER = "/redfish/v1/Chassis/1/NetworkAdapters/NIC0"
FUNCTIONS = ADAPTER + "/NetworkDeviceFunctions"
PCIE = "/redfish/v1/Chassis/1/PCIeDevices/NIC0"


@pytest.fixture
def nic_bmc(recorded_bmc):
    recorded_bmc.documents.clear()
    recorded_bmc.documents.update(rbmc.load("bmc_nic.json"))
    return recorded_bmc


def _read(bmc):
    node = rbmc.node_for(bmc)
    document = discovery.read_document(node)
    inventory.validate(document)
    return node, {d["id"]: d for d in document["devices"]}


def _change(bmc, path, **fields):
    doc = copy.deepcopy(bmc.documents[path])
    doc.update(fields)
    bmc.documents[path] = doc
    return doc


def test_sriov_nic_is_one_nic_device_with_its_pf(nic_bmc):
    node, devices = _read(nic_bmc)
    assert set(devices) == {"gpu0", "nic0"}
    assert devices["nic0"] == {
        "id": "nic0", "type": "NIC", "vendor_id": "0x15b3",
        "product_id": "0x1017", "vendor": "Mellanox Technologies",
        "model": "ConnectX-5 EN 25GbE", "pci_address": "0000:3b:00.0",
        "redfish_uri": ADAPTER, "firmware_version": "16.35.2000",
        "health": "OK", "program_mode": "single",
        "regions": [{"id": "0", "resource_class": "CUSTOM_NIC",
                     "function_id": None,
                     "rp_uuid": inventory.region_rp_uuid(node.uuid, "nic0",
                                                         "0")}]}


def test_virtual_functions_are_not_reported(nic_bmc):
    _node, devices = _read(nic_bmc)
    # NOTE(ironic-accel): VF addresses are the host agent's to find.
    assert "attach_handles" not in devices["nic0"]["regions"][0]
    assert discovery.document_traits(
        {"devices": list(devices.values())}) == {"CUSTOM_ACCEL_GPU",
                                                 "CUSTOM_ACCEL_NIC"}


def test_nic_firmware_from_inventory_member_related_to_adapter(nic_bmc):
    _change(nic_bmc, "/redfish/v1/UpdateService/FirmwareInventory/1-NIC0",
            Version="16.35.4030")
    _node, devices = _read(nic_bmc)
    assert devices["nic0"]["firmware_version"] == "16.35.4030"


def test_adapter_without_sriov_is_left_out(nic_bmc):
    adapter = copy.deepcopy(nic_bmc.documents[ADAPTER])
    # NOTE(ironic-accel): as a BMC reports a NIC without SR-IOV: an SRIOV
    # object saying not VEPA capable, no virtual function count.
    adapter["Controllers"][0]["ControllerCapabilities"][
        "VirtualizationOffload"] = {
            "SRIOV": {"SRIOVVEPACapable": False},
            "VirtualFunction": {"DeviceMaxCount": None}}
    nic_bmc.documents[ADAPTER] = adapter
    for pf in ("0", "1"):
        _change(nic_bmc, f"{FUNCTIONS}/{pf}", MaxVirtualFunctions=0,
                VirtualFunctionsEnabled=False)
    _node, devices = _read(nic_bmc)
    assert set(devices) == {"gpu0"}


def test_device_function_offering_vfs_makes_an_sriov_nic(nic_bmc):
    adapter = copy.deepcopy(nic_bmc.documents[ADAPTER])
    del adapter["Controllers"][0]["ControllerCapabilities"]
    nic_bmc.documents[ADAPTER] = adapter
    _node, devices = _read(nic_bmc)
    assert devices["nic0"]["type"] == "NIC"


def test_pf_found_through_device_function_link_alone(nic_bmc):
    adapter = copy.deepcopy(nic_bmc.documents[ADAPTER])
    del adapter["Controllers"][0]["Links"]["PCIeDevices"]
    nic_bmc.documents[ADAPTER] = adapter
    system = nic_bmc.documents["/redfish/v1/Systems/1"]
    nic_bmc.documents["/redfish/v1/Systems/1"] = dict(system, PCIeDevices=[
        {"@odata.id": "/redfish/v1/Chassis/1/PCIeDevices/GPU0"}])
    _node, devices = _read(nic_bmc)
    assert set(devices) == {"gpu0", "nic0"}
    assert (devices["nic0"]["pci_address"], devices["nic0"]["product_id"]) \
        == ("0000:3b:00.0", "0x1017")


def test_pcie_that_fails_leaves_the_nic_without_address(nic_bmc):
    nic_bmc.answer("GET", PCIE, (404, {}, None))
    for pf in ("0", "1"):
        nic_bmc.answer("GET", f"{PCIE}/PCIeFunctions/{pf}", (404, {}, None))
    node, devices = _read(nic_bmc)
    nic = devices["nic0"]
    assert (nic["pci_address"], nic["vendor_id"], nic["product_id"]) == (
        None, None, None)
    assert nic["redfish_uri"] == ADAPTER


def test_bmc_without_network_adapters_reads_none(nic_bmc):
    chassis = nic_bmc.documents["/redfish/v1/Chassis/1"]
    nic_bmc.documents["/redfish/v1/Chassis/1"] = {
        k: v for k, v in chassis.items() if k != "NetworkAdapters"}
    node = rbmc.node_for(nic_bmc)
    assert redfish_inventory.get_network_adapters(node) == []
    _node, devices = _read(nic_bmc)
    assert set(devices) == {"gpu0"}


def test_reading_lists_functions_and_pcie(nic_bmc):
    (reading,) = redfish_inventory.get_network_adapters(
        rbmc.node_for(nic_bmc))
    assert reading.adapter.sriov_capable
    assert reading.adapter.firmware_version == "16.35.2000"
    assert sorted(f.identity for f in reading.device_functions) == ["0", "1"]
    assert all(f.virtual_functions_enabled and f.max_virtual_functions == 8
               for f in reading.device_functions)
    assert sorted(f.function_id for f in reading.pcie_functions) == [
        0, 1, 2, 3, 10, 11]
    assert reading.pcie_device_uris == [PCIE]
