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

"""Discovery on the Redfish shapes of real BMCs (tests/data/redfish).

Each tree reproduces a recorded or published BMC (SOURCES.rst says which);
the expected devices are decided from the data. When the originals are
present (``/work/shared/realdata/redfish`` or ``$IRONIC_ACCEL_REALDATA``),
the reading of each original must equal the reading of its fixture.
"""

import copy
import logging
import os
import types

from ironic.conf import CONF
import pytest
from sushy.resources.system import constants

from accel_common import inventory
from accel_common.placement import tree as placement_tree
from accel_tools.emulator import recorded
from ironic_accel import discovery
from ironic_accel.redfish import client as redfish_client
from ironic_accel.redfish import inventory as redfish_inventory
from tests.unit.ironic_accel import recorded_bmc as rbmc

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "data", "redfish")
REALDATA = os.environ.get("IRONIC_ACCEL_REALDATA",
                          "/work/shared/realdata/redfish")
V1 = "/redfish/v1"

A100 = ("GPU", None, None, "NVIDIA", "NVIDIA_A100-SXM4-40GB", None,
        "92.00.19.00.13")
MI200 = ("GPU", None, None, "AMD", "AMD INSTINCT MI200 (MCM) OAM LC", None,
         None)
TU102 = ("GPU", None, None, "Nvidia(R) Corporation", "Nvidia(R) TU102", None,
         None)
H100 = ("GPU", "0x10de", "0x2330", "NVIDIA", "NVIDIA H100 80GB HBM3", None,
        "96.00.74.00.1C")
SUPERC = ("NIC", None, None, "Contoso Systems Inc.")

#: (tree, node's System) -> {device id: (type, vendor_id, product_id,
#: vendor, model, pci_address, firmware_version)}
EXPECTED = {
    ("dmtf-public-cxl", "CXL-System"): {
        "fpga": ("FPGA", "0xabcd", "0xabcd", None, None, None, None),
        "gpu": ("GPU", "0xabcd", "0xabcd", None, None, None, None)},
    ("dmtf-public-rackmount1", "437XR1138R2"): {
        "fpga1": ("FPGA", None, None, "Intel(R) Corporation", "Stratix 10",
                  None, "Blue v.1.00.86")},
    ("dmtf-public-tower", "437XR1238R2"): {
        "gpu1": TU102, "gpu2": TU102,
        # NOTE(ironic-accel): the adapter's Id, not its URI's NIC1; its
        # PCIe device lists no functions, so no address or ids.
        "9fa725a1": ("NIC", None, None, "Contoso", "SuperNIC 2000", None,
                     "7.4.10")},
    # NOTE(ironic-accel): two adapters with the same Id, each in a card
    # chassis the server's chassis contains; neither links PCIe.
    ("dmtf-public-smartnic", "437XR1138R2"): {
        "conto2550": SUPERC + ("Contoso SuperC 2000 25Gb 2p Adapter", None,
                               "8.11.0"),
        "conto2550-2": SUPERC + ("Contoso SuperC 2050 25Gb 2p Adapter",
                                 None, "8.11.0")},
    ("hpe-cray-ex235n", "Node0"): {f"gpu{n}": A100 for n in range(4)},
    ("hpe-cray-ex235n", "Node1"): {f"gpu{n}": A100 for n in range(4)},
    ("hpe-cray-ex235a", "Node0"): {f"gpu{n}": MI200 for n in range(8)},
    ("nvidia-hgx-h100", "1"): dict(
        {f"gpu_sxm_{n}": H100 for n in range(1, 9)},
        fpga_0=("FPGA", None, None, "NVIDIA", "HGX FPGA", None, "2.0.2")),
    ("project-spellings", "1"): {
        "gpu0": ("GPU", "0x10de", "0x1eb8", "NVIDIA", "Tesla T4",
                 "0000:3b:00.0", None),
        "gpu1": ("GPU", "0x10de", "0x1eb8", "NVIDIA", "Tesla T4", None,
                 "90.04.96.00.9F"),
        "acc0": ("QAT", "0x8086", "0x37c8", "Intel", "QAT 8970",
                 "0000:5e:00.0", "4.7.0"),
        "slot4": ("GPU", "0x10de", "0x20b5", "NVIDIA", "A100 80GB PCIe",
                  "0000:ca:00.0", "92.00.45.00.05")},
}

#: The trees recorded or published by others (the rest are the project's).
RECORDED = ("dmtf-public-cxl", "dmtf-public-rackmount1", "dmtf-public-tower",
            "dmtf-public-smartnic", "hpe-cray-ex235n", "hpe-cray-ex235a")


def _summary(document):
    return {d["id"]: (d["type"], d["vendor_id"], d["product_id"],
                      d["vendor"], d["model"], d["pci_address"],
                      d["firmware_version"])
            for d in document["devices"]}


def _read(tree, system):
    bmc = rbmc.RecordedBMC(tree)
    try:
        return discovery.read_document(
            rbmc.node_for(bmc, system=f"{V1}/Systems/{system}"))
    finally:
        bmc.stop()


@pytest.fixture
def fast_gateway():
    CONF.set_override("bmc_retries", 0, group="ironic_accel")
    redfish_client.clear_cache()
    yield
    redfish_client.clear_cache()
    CONF.clear_override("bmc_retries", group="ironic_accel")


def _tree(name):
    return recorded.load_tree(os.path.join(DATA, name))


@pytest.mark.parametrize("source, system", sorted(EXPECTED))
def test_every_corpus_accelerator_is_read(fast_gateway, source, system):
    document = _read(_tree(source), system)
    assert inventory.validate(document) is document
    assert _summary(document) == EXPECTED[(source, system)]
    # NOTE(ironic-accel): a 1.0 reader keeps reading documents with every
    # address; these need 1.1.
    assert document["schema_version"] == inventory.version_for(
        document["devices"])


def test_corpus_holds_the_21_recorded_accelerators_and_3_nics():
    recorded_types = [device[0] for key in EXPECTED if key[0] in RECORDED
                      for device in EXPECTED[key].values()]
    assert len(recorded_types) - recorded_types.count("NIC") == 21
    assert recorded_types.count("NIC") == 3


@pytest.mark.parametrize("source, system",
                         sorted(k for k in EXPECTED if k[0] in RECORDED))
def test_original_reads_as_its_fixture(fast_gateway, source, system):
    original = os.path.join(REALDATA, source)
    if not os.path.isdir(original):
        pytest.skip(f"{original} is not here (the fixtures still ran)")
    mine = _read(_tree(source), system)
    original_tree = recorded.load_tree(original)
    theirs = _read(original_tree, system)
    if not any("/NetworkAdapters" in path for path in original_tree):
        # NOTE(ironic-accel): the trimmed originals were cut before network
        # adapters were read; the NICs of the fixture (SOURCES.rst names
        # the mockup they come from) have nothing to compare with there.
        mine["devices"] = [d for d in mine["devices"] if d["type"] != "NIC"]
        mine["schema_version"] = inventory.version_for(mine["devices"])
    for doc in (mine, theirs):
        doc.pop("refreshed_at")
    assert theirs == mine


def test_bmc_without_update_service_reads_inventory(fast_gateway):
    tree = _tree("dmtf-public-cxl")
    assert "UpdateService" not in tree[V1 + "/"]
    bmc = rbmc.RecordedBMC(tree)
    try:
        node = rbmc.node_for(bmc, system=f"{V1}/Systems/CXL-System")
        assert redfish_inventory.get_firmware_inventory(node) == []
    finally:
        bmc.stop()


def test_update_service_without_actions_reads_firmware(fast_gateway):
    tree = _tree("project-spellings")
    assert "Actions" not in tree[V1 + "/UpdateService"]
    bmc = rbmc.RecordedBMC(tree)
    try:
        node = rbmc.node_for(bmc)
        members = redfish_inventory.get_firmware_inventory(node)
        assert [m.identity for m in members] == ["GPU1_VBIOS"]
    finally:
        bmc.stop()


def test_update_service_that_fails_gives_empty_inventory(fast_gateway):
    tree = _tree("hpe-cray-ex235n")
    del tree[V1 + "/UpdateService"]
    document = _read(tree, "Node0")
    assert [d["firmware_version"] for d in document["devices"]] == [None] * 4


def test_function_linking_back_with_links_processor(fast_gateway):
    tree = _tree("dmtf-public-cxl")
    for uri in ("/Chassis/CXLType1/Processors/FPGA",
                "/Chassis/CXLType2/Processors/GPU"):
        proc = tree[V1 + uri]
        links = dict(proc["Links"])
        links.pop("PCIeFunctions")
        tree[V1 + uri] = dict(proc, Links=links)
    system = tree[V1 + "/Systems/CXL-System"]
    # NOTE(ironic-accel): the chassis is now the only way to the functions.
    tree[V1 + "/Systems/CXL-System"] = dict(system, Links=dict(
        system.get("Links") or {}, Chassis=[
            {"@odata.id": V1 + "/Chassis/CXLType1"},
            {"@odata.id": V1 + "/Chassis/CXLType2"}]))
    for chassis in ("CXLType1", "CXLType2"):
        tree.setdefault(V1 + f"/Chassis/{chassis}", {
            "@odata.id": V1 + f"/Chassis/{chassis}", "Id": chassis,
            "Name": chassis,
            "PCIeDevices": {"@odata.id": V1 + f"/Chassis/{chassis}/"
                                              "PCIeDevices"}})
        tree.setdefault(V1 + f"/Chassis/{chassis}/PCIeDevices", {
            "@odata.id": V1 + f"/Chassis/{chassis}/PCIeDevices",
            "Name": "PCIe devices", "Members": [
                {"@odata.id": V1 + f"/Chassis/{chassis}/PCIeDevices/1"}]})
    assert _summary(_read(tree, "CXL-System")) == EXPECTED[
        ("dmtf-public-cxl", "CXL-System")]


def test_baseboard_of_a_service_with_several_hosts_is_not_taken(
        fast_gateway, caplog):
    tree = _tree("hpe-cray-ex235n")
    hgx = _tree("nvidia-hgx-h100")
    board = V1 + "/Systems/HGX_Baseboard_0"
    tree.update({path: doc for path, doc in hgx.items()
                 if path.startswith(board) or "/Chassis/HGX_GPU" in path})
    systems = tree[V1 + "/Systems"]
    tree[V1 + "/Systems"] = dict(systems, Members=systems["Members"] + [
        {"@odata.id": board}])
    with caplog.at_level(logging.WARNING):
        document = _read(tree, "Node0")
    assert sorted(_summary(document)) == [f"gpu{n}" for n in range(4)]
    assert "HGX_Baseboard_0" in caplog.text and "left out" in caplog.text


def test_baseboard_gpus_named_like_host_gpus_get_unique_ids(fast_gateway):
    tree = _tree("nvidia-hgx-h100")
    host_gpu = dict(tree[V1 + "/Systems/HGX_Baseboard_0/Processors/"
                              "GPU_SXM_1"],
                    **{"@odata.id": V1 + "/Systems/1/Processors/GPU_SXM_1"})
    host_gpu.pop("Links")
    tree[V1 + "/Systems/1/Processors/GPU_SXM_1"] = host_gpu
    procs = tree[V1 + "/Systems/1/Processors"]
    tree[V1 + "/Systems/1/Processors"] = dict(procs, Members=procs[
        "Members"] + [{"@odata.id": V1 + "/Systems/1/Processors/GPU_SXM_1"}])
    ids = list(_summary(_read(tree, "1")))
    assert ids[0] == "gpu_sxm_1"
    assert "hgx_baseboard_0-gpu_sxm_1" in ids
    assert len(ids) == len(set(ids)) == 10


def test_bmc_display_controller_is_not_an_accelerator(fast_gateway, caplog):
    with caplog.at_level(logging.DEBUG, logger="ironic_accel.discovery"):
        document = _read(_tree("project-spellings"), "1")
    assert "vga" not in _summary(document)
    assert "PCIeDevices/VGA is not an accelerator" in caplog.text


def test_missing_pcie_device_costs_only_that_device(fast_gateway, caplog):
    tree = _tree("project-spellings")
    del tree[V1 + "/Chassis/1/PCIeDevices/Slot4"]
    with caplog.at_level(logging.WARNING):
        document = _read(tree, "1")
    assert "slot4" not in _summary(document)
    assert "gpu0" in _summary(document)
    assert "Slot4 failed, left out" in caplog.text


@pytest.mark.parametrize("value, expected", [
    ("0x10DE", "0x10de"), ("0x10de", "0x10de"), ("10de", "0x10de"),
    ("10DE", "0x10de"), (4318, "0x10de"), ("0xABCD", "0xabcd"),
    ("GenuineIntel", None), ("0x10000", None), (70000, None), (None, None),
    (True, None), ("", None),
])
def test_vendor_id_spellings(value, expected):
    assert discovery._hex_id(value) == expected


def test_firmware_by_id_convention_needs_one_match():
    inventory_members = [
        _member("Node0.Acc0.VBIOS", "92.00.19.00.13"),
        _member("Node1.Acc0.VBIOS", "92.00.19.00.99"),
        _member("FPGA0", "4.05"),
        _member("Node0.AccVBIOS", "113-D65201"),
        _member("Node0.Acc1.VBIOS", "1"), _member("Node0.GPU1.Extra", "2"),
    ]
    procs = [_proc("GPU0", "Node0"), _proc("GPU1", "Node0")]
    versions = redfish_inventory.firmware_versions_by_processor(
        inventory_members, procs)
    # GPU1 is named twice: neither is taken.
    assert versions == {"/Systems/Node0/Processors/GPU0": (
        "/fw/Node0.Acc0.VBIOS", "92.00.19.00.13")}


def test_related_item_wins_over_id_convention():
    members = [_member("Node0.Acc0.VBIOS", "1"),
               _member("Other", "2", related=["/Systems/Node0/Processors/"
                                               "GPU0"])]
    versions = redfish_inventory.firmware_versions_by_processor(
        members, [_proc("GPU0", "Node0")])
    assert versions["/Systems/Node0/Processors/GPU0"][1] == "2"


def _member(identity, version, related=None):
    return types.SimpleNamespace(
        identity=identity, version=version, path=f"/fw/{identity}",
        related_item=[{"@odata.id": r} for r in related or []] or None)


def _proc(identity, system, processor_type="GPU"):
    return types.SimpleNamespace(
        identity=identity, system_identity=system,
        path=f"/Systems/{system}/Processors/{identity}",
        processor_type=constants.ProcessorType(processor_type))


def test_document_without_addresses_reports_placement_names():
    document = _read_static("hpe-cray-ex235n", "Node0")
    desired = placement_tree.desired_tree(document)
    names = sorted(p.name for p in desired.providers)
    assert names == [f"compute-1.example.org_gpu{n}" for n in range(4)]
    assert all(p.pci_address is None and p.total == 1
               for p in desired.providers)
    assert all(p.traits == {"OWNER_CYBORG"} for p in desired.providers)


def _read_static(source, system):
    CONF.set_override("bmc_retries", 0, group="ironic_accel")
    redfish_client.clear_cache()
    try:
        return copy.deepcopy(_read(_tree(source), system))
    finally:
        CONF.clear_override("bmc_retries", group="ironic_accel")
        redfish_client.clear_cache()
