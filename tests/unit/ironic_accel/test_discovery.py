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

import types

from ironic.conf import CONF
import pytest

from accel_common import inventory
from ironic_accel import discovery
from tests.unit.ironic_accel import recorded_bmc as rbmc

FUNCTION = "3f3c1b2a-0000-4000-8000-00000000abcd"


def _devices(document):
    return {d["id"]: d for d in document["devices"]}


def test_read_document_from_recorded_bmc(recorded_bmc):
    node = rbmc.node_for(recorded_bmc)
    document = discovery.read_document(node)

    inventory.validate(document)
    assert document["host"] == "compute-1.example.org"
    devices = _devices(document)
    fpga, gpu = devices["fpga0"], devices["gpu0"]
    assert fpga == {
        "id": "fpga0", "type": "FPGA", "vendor_id": "0x8086",
        "product_id": "0x0b30", "vendor": "Intel", "model": "PAC Arria10",
        "pci_address": "0000:5e:00.0",
        "redfish_uri": "/redfish/v1/Systems/1/Processors/FPGA0",
        "firmware_version": "2.0.1", "health": "OK",
        "program_mode": "dynamic",
        "regions": [
            {"id": slot, "resource_class": "FPGA", "function_id": None,
             "rp_uuid": inventory.region_rp_uuid(node.uuid, "fpga0", slot)}
            for slot in ("0", "1")]}
    assert (gpu["type"], gpu["vendor_id"], gpu["product_id"],
            gpu["pci_address"], gpu["firmware_version"],
            gpu["program_mode"]) == ("GPU", "0x10de", "0x1eb8",
                                     "0000:af:00.0", "90.04.38.00.03",
                                     "single")
    assert [(r["id"], r["resource_class"]) for r in gpu["regions"]] == [
        ("0", "PGPU")]


def test_read_document_reports_loaded_functions(recorded_bmc):
    recorded_bmc.documents.update(rbmc.load("bmc_fpga_programmed.json"))
    node = rbmc.node_for(recorded_bmc)
    fpga = _devices(discovery.read_document(node))["fpga0"]
    assert [r["function_id"] for r in fpga["regions"]] == [FUNCTION,
                                                           FUNCTION]


def test_read_document_without_accelerators_is_empty(recorded_bmc):
    processors = "/redfish/v1/Systems/1/Processors"
    recorded_bmc.documents[processors] = dict(
        recorded_bmc.documents[processors],
        Members=[{"@odata.id": processors + "/CPU0"}])
    system = recorded_bmc.documents["/redfish/v1/Systems/1"]
    recorded_bmc.documents["/redfish/v1/Systems/1"] = dict(
        system, PCIeDevices=[])
    pcie = "/redfish/v1/Chassis/1/PCIeDevices"
    recorded_bmc.documents[pcie] = dict(recorded_bmc.documents[pcie],
                                        Members=[])
    document = discovery.read_document(rbmc.node_for(recorded_bmc))
    assert document["devices"] == []
    assert discovery.document_traits(document) == set()


def test_fpga_with_one_slot_is_single_mode(recorded_bmc):
    uri = "/redfish/v1/Systems/1/Processors/FPGA0"
    doc = recorded_bmc.documents[uri]
    fpga = dict(doc["FPGA"],
                ReconfigurationSlots=doc["FPGA"]["ReconfigurationSlots"][:1])
    recorded_bmc.documents[uri] = dict(doc, FPGA=fpga)
    device = _devices(discovery.read_document(
        rbmc.node_for(recorded_bmc)))["fpga0"]
    assert device["program_mode"] == "single"
    assert [r["id"] for r in device["regions"]] == ["0"]


def test_device_without_pcie_function_is_listed_without_address(
        recorded_bmc):
    gpu = "/redfish/v1/Systems/1/Processors/GPU0"
    recorded_bmc.documents[gpu] = dict(recorded_bmc.documents[gpu],
                                       Links={})
    del recorded_bmc.documents["/redfish/v1/Chassis/1/PCIeDevices/GPU0"]
    system = recorded_bmc.documents["/redfish/v1/Systems/1"]
    recorded_bmc.documents["/redfish/v1/Systems/1"] = dict(
        system, PCIeDevices=system["PCIeDevices"][:1])
    document = discovery.read_document(rbmc.node_for(recorded_bmc))
    assert document["schema_version"] == "1.1"
    gpu_device = _devices(document)["gpu0"]
    assert (gpu_device["pci_address"], gpu_device["vendor_id"],
            gpu_device["product_id"], gpu_device["redfish_uri"],
            gpu_device["firmware_version"]) == (
        None, "0x10de", None, gpu, "90.04.38.00.03")
    assert _devices(document)["fpga0"]["pci_address"] == "0000:5e:00.0"


def test_document_traits_include_types_and_functions(recorded_bmc):
    recorded_bmc.documents.update(rbmc.load("bmc_fpga_programmed.json"))
    document = discovery.read_document(rbmc.node_for(recorded_bmc))
    assert discovery.document_traits(document) == {
        "CUSTOM_ACCEL_FPGA", "CUSTOM_ACCEL_GPU",
        "CUSTOM_FPGA_FUNCTION_ID_INTEL_3F3C1B2A_0000_4000_8000_00000000ABCD"}


@pytest.mark.parametrize("trait, owned", [
    ("CUSTOM_ACCEL_FPGA", True),
    ("CUSTOM_FPGA_FUNCTION_ID_INTEL_X", True),
    ("CUSTOM_ACCEL_PROGRAM_GZIP", False),  # a deploy template's trait
    ("CUSTOM_RAID", False),
])
def test_is_owned_trait_leaves_other_traits_alone(trait, owned):
    assert discovery.is_owned_trait(trait) is owned


@pytest.mark.parametrize("source, expected", [
    ("name", "compute-1.example.org"),
    ("extra:hypervisor", "hv-7.example.org"),
    ("instance_info:display_name", "vm-host"),
    ("extra:missing", "1be26c0b-03f2-4d2e-ae87-c02d7f33c123"),
    ("{name}.cloud.example", "compute-1.example.org.cloud.example"),
    ("bm-{uuid}", "bm-1be26c0b-03f2-4d2e-ae87-c02d7f33c123"),
])
def test_compute_host_follows_compute_host_source(source, expected):
    node = types.SimpleNamespace(
        uuid="1be26c0b-03f2-4d2e-ae87-c02d7f33c123",
        name="compute-1.example.org",
        extra={"hypervisor": "hv-7.example.org"},
        instance_info={"display_name": "vm-host"})
    CONF.set_override("compute_host_source", source, group="ironic_accel")
    try:
        assert discovery.compute_host(node) == expected
    finally:
        CONF.clear_override("compute_host_source", group="ironic_accel")


@pytest.mark.parametrize("source", ["{hostname}.example.org", "{name",
                                    "extra:", "fqdn"])
def test_compute_host_source_refuses_what_it_cannot_map(source):
    with pytest.raises(ValueError):
        CONF.set_override("compute_host_source", source,
                          group="ironic_accel")


def test_compute_host_template_without_name_uses_uuid():
    node = types.SimpleNamespace(uuid="1be26c0b", name=None, extra={},
                                 instance_info={})
    CONF.set_override("compute_host_source", "{name}.example.org",
                      group="ironic_accel")
    try:
        assert discovery.compute_host(node) == "1be26c0b"
    finally:
        CONF.clear_override("compute_host_source", group="ironic_accel")


def test_firmware_components_name_accelerators(recorded_bmc):
    document = discovery.read_document(rbmc.node_for(recorded_bmc))
    components = {c["component"]: c
                  for c in discovery.firmware_components(document)}
    assert components["accel:fpga0"]["current_version"] == "2.0.1"
    assert components["accel:fpga0"]["vendor"] == "Intel"
    assert set(components) == {"accel:fpga0", "accel:gpu0"}


@pytest.mark.parametrize("numbers, expected", [
    (("0x0000", "0x5e", "0x00", "0x00"), "0000:5e:00.0"),
    ((0, 175, 0, 1), "0000:af:00.1"),
    ((None, "0x3b", "0x1f", "0x7"), "0000:3b:1f.7"),
])
def test_pci_address_from_function_numbers(numbers, expected):
    function = types.SimpleNamespace(
        segment_number=numbers[0], bus_number=numbers[1],
        device_number=numbers[2], function_number=numbers[3],
        function_id=None)
    assert discovery.pci_address(function) == expected


def test_pci_address_unknown_without_bus():
    function = types.SimpleNamespace(
        segment_number=None, bus_number=None, device_number=None,
        function_number=None, function_id=0)
    assert discovery.pci_address(function) is None


def _with_health(recorded_bmc, uri, health):
    document = dict(recorded_bmc.documents[uri])
    if health is None:
        document.pop("Status", None)
    else:
        document["Status"] = {"State": "Enabled", "Health": health}
    recorded_bmc.documents[uri] = document


@pytest.mark.parametrize("processor, pcie, expected", [
    ("OK", "OK", "OK"),
    ("Critical", "OK", "Critical"),
    ("OK", "Warning", "Warning"),
    ("Warning", "Critical", "Critical"),
    (None, "Warning", "Warning"),
    (None, None, None),
])
def test_a_device_s_health_is_the_worst_its_bmc_reports(
        recorded_bmc, processor, pcie, expected):
    _with_health(recorded_bmc, "/redfish/v1/Systems/1/Processors/FPGA0",
                 processor)
    _with_health(recorded_bmc, "/redfish/v1/Chassis/1/PCIeDevices/FPGA0",
                 pcie)
    node = rbmc.node_for(recorded_bmc)
    fpga = _devices(discovery.read_document(node))["fpga0"]
    assert fpga.get("health") == expected
    if expected is None:
        assert "health" not in fpga
