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

import copy
import json
import os
import uuid

import os_traits
import pytest

from accel_common import exception
from accel_common.placement import tree

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..",
                       "etc", "cyborg_lite", "inventory.example.json")


@pytest.fixture
def doc():
    with open(EXAMPLE) as f:
        return json.load(f)


def _provider(doc, device_index, region_index=0):
    rp_uuid = doc["devices"][device_index]["regions"][region_index]["rp_uuid"]
    return tree.desired_tree(doc).by_uuid()[rp_uuid]


def test_desired_tree_one_provider_per_region(doc):
    desired = tree.desired_tree(doc)
    assert desired.host == "compute-1.example.org"
    assert [p.uuid for p in desired.providers] == [
        r["rp_uuid"] for d in doc["devices"] for r in d["regions"]]


def test_names_carry_region_only_for_multi_region_devices(doc):
    assert _provider(doc, 0, 1).name == "compute-1.example.org_0000:5e:00.0_1"
    assert _provider(doc, 1).name == "compute-1.example.org_0000:af:00.0"


def test_total_is_handle_count_or_one(doc):
    assert _provider(doc, 0).total == 4
    del doc["devices"][0]["regions"][0]["attach_handles"]
    assert _provider(doc, 0).total == 1


def test_fpga_traits_named_as_cyborg_names_them(doc):
    assert _provider(doc, 0).traits == {
        "OWNER_CYBORG", "CUSTOM_FPGA_INTEL", "CUSTOM_FPGA_INTEL_PAC_ARRIA10",
        "CUSTOM_FPGA_PRODUCT_ID_0B30"}


def test_nvidia_gpu_traits(doc):
    assert _provider(doc, 1).traits == {"OWNER_CYBORG", "CUSTOM_NVIDIA_1EB8"}


def test_nvidia_vgpu_type_trait(doc):
    region = doc["devices"][1]["regions"][0]
    region["resource_class"] = "VGPU"
    region["attach_handles"] = [{"type": "MDEV", "pci_address": "0000:af:00.0",
                                 "mdev_type": "nvidia-222"}]
    assert "CUSTOM_NVIDIA_1EB8_222" in _provider(doc, 1).traits


def test_vendor_from_pci_id_when_name_missing(doc):
    doc["devices"][0]["vendor"] = None
    doc["devices"][0]["vendor_id"] = "0x10EE"
    assert "CUSTOM_FPGA_XILINX" in _provider(doc, 0).traits
    doc["devices"][0]["vendor_id"] = "0xabcd"
    assert "CUSTOM_FPGA_ABCD" in _provider(doc, 0).traits


def test_function_trait_is_valid_even_with_dashes(doc):
    doc["devices"][0]["regions"][0]["function_id"] = "gzip-1.1"
    trait = _provider(doc, 0).function_trait
    assert trait == "CUSTOM_FPGA_FUNCTION_ID_INTEL_GZIP_1_1"
    assert os_traits.is_custom(trait)


def test_all_traits_are_valid_names(doc):
    for provider in tree.desired_tree(doc).providers:
        for trait in provider.traits:
            assert tree.check_trait(trait) == trait


def test_bad_resource_class_is_refused(doc):
    doc["devices"][0]["regions"][0]["resource_class"] = "ACCELERATOR"
    with pytest.raises(exception.InvalidTree, match="neither standard nor"):
        tree.desired_tree(doc)


def test_overlong_name_is_refused(doc):
    doc["host"] = "h" * 190
    with pytest.raises(exception.InvalidTree, match="longer than Placement"):
        tree.desired_tree(doc)


def test_invalid_document_names_the_field(doc):
    del doc["host"]
    with pytest.raises(exception.InvalidInventory, match="host"):
        tree.desired_tree(doc)


def test_merge_traits_keeps_what_others_own(doc):
    provider = _provider(doc, 0)
    current = {"CUSTOM_RACK_A", "CUSTOM_FPGA_FUNCTION_ID_INTEL_GZIP",
               "CUSTOM_FPGA_INTEL_OLD_MODEL", tree.RETIRED_TRAIT}
    merged = tree.merge_traits(current, provider)
    assert merged == provider.traits | {
        "CUSTOM_RACK_A", "CUSTOM_FPGA_FUNCTION_ID_INTEL_GZIP"}


def test_merge_traits_adds_document_function_only_when_none(doc):
    doc["devices"][0]["regions"][0]["function_id"] = "crc"
    provider = _provider(doc, 0)
    assert provider.function_trait in tree.merge_traits(set(), provider)
    other = tree.merge_traits({"CUSTOM_FPGA_FUNCTION_ID_INTEL_GZIP"},
                              provider)
    assert provider.function_trait not in other


def test_merge_inventory_preserves_reserved_and_ratios(doc):
    provider = _provider(doc, 0)
    current = {"FPGA": {"total": 2, "max_unit": 2, "reserved": 2,
                        "min_unit": 1, "step_size": 1,
                        "allocation_ratio": 1.0}}
    merged = tree.merge_inventory(current, provider)
    assert merged == {"FPGA": {"total": 4, "max_unit": 4, "reserved": 2,
                               "min_unit": 1, "step_size": 1,
                               "allocation_ratio": 1.0}}
    assert not tree.inventory_equal(current, merged)
    assert tree.inventory_equal(merged, copy.deepcopy(merged))


def test_merge_inventory_clamps_reserved_and_revives(doc):
    provider = _provider(doc, 1)  # total 1
    current = {"PGPU": {"total": 3, "max_unit": 3, "reserved": 3}}
    assert tree.merge_inventory(current, provider)["PGPU"]["reserved"] == 1
    assert tree.merge_inventory(current, provider, revive=True)["PGPU"][
        "reserved"] == 0


def test_merge_inventory_drops_a_changed_class(doc):
    provider = _provider(doc, 1)
    merged = tree.merge_inventory({"CUSTOM_OLD": {"total": 1}}, provider)
    assert set(merged) == {"PGPU"}


def _nic_document(handles, pci="0000:3b:00.0"):
    return {"schema_version": "1.0", "node_uuid": "n", "host": "compute-1",
            "devices": [{
                "id": "nic0", "type": "NIC", "vendor_id": "0x8086",
                "product_id": "0x1572", "pci_address": pci,
                "program_mode": "single",
                "regions": [{"id": "p0", "rp_uuid": "4a1e1d4e-3b5c-5d6e-"
                                                    "8f70-8192a3b4c5d6",
                             "resource_class": "CUSTOM_NIC",
                             "attach_handles": handles}]}]}


def test_nic_vf_region_offers_every_vf_with_vf_and_physnet_traits():
    handles = [{"type": "PCI", "pci_address": f"0000:3b:02.{i}",
                "physical_network": "physnet1"} for i in range(4)]
    provider = tree.desired_tree(_nic_document(handles)).providers[0]
    assert provider.total == 4
    assert provider.traits == {
        "OWNER_CYBORG", "CUSTOM_PCI_INTEL", "CUSTOM_PCI_PRODUCT_ID_1572",
        "CUSTOM_VF", "CUSTOM_PHYSNET1"}


def test_nic_whole_port_region_is_a_pf():
    handles = [{"type": "PCI", "pci_address": "0000:3b:00.0",
                "physical_network": "physnet2"}]
    provider = tree.desired_tree(_nic_document(handles)).providers[0]
    assert {"CUSTOM_PF", "CUSTOM_PHYSNET2"} <= provider.traits
    assert "CUSTOM_VF" not in provider.traits


def test_nic_region_without_handles_keeps_the_vf_trait_set_in_band():
    document = _nic_document([])
    del document["devices"][0]["regions"][0]["attach_handles"]
    provider = tree.desired_tree(document).providers[0]
    assert not provider.traits & {"CUSTOM_VF", "CUSTOM_PF"}
    current = {"OWNER_CYBORG", "CUSTOM_VF", "CUSTOM_PHYSNET1"}
    assert tree.merge_traits(current, provider) >= current


def test_nic_region_that_became_a_whole_port_loses_its_vf_trait():
    handles = [{"type": "PCI", "pci_address": "0000:3b:00.0",
                "physical_network": "physnet1"}]
    provider = tree.desired_tree(_nic_document(handles)).providers[0]
    merged = tree.merge_traits({"OWNER_CYBORG", "CUSTOM_VF"}, provider)
    assert "CUSTOM_PF" in merged and "CUSTOM_VF" not in merged


def test_region_traits_join_the_identity_traits(doc):
    doc["devices"][1]["regions"][0]["traits"] = ["CUSTOM_QAT_GEN4"]
    assert _provider(doc, 1).traits == {
        "OWNER_CYBORG", "CUSTOM_NVIDIA_1EB8", "CUSTOM_QAT_GEN4"}


def test_merge_inventory_keeps_the_spec_class_while_handles_are_unknown(
        doc):
    """cyborg_lite gave the region the operator's class with the handles
    its agent found; the reporter, who knows neither, keeps both."""
    del doc["devices"][1]["regions"][0]["attach_handles"]
    provider = _provider(doc, 1)
    current = {"CUSTOM_GPU_VF": {"total": 7, "max_unit": 7, "reserved": 0}}
    assert tree.merge_inventory(current, provider) == current
    doc["devices"][1]["regions"][0]["attach_handles"] = [
        {"type": "PCI", "pci_address": "0000:af:00.0"}]
    assert set(tree.merge_inventory(current, _provider(doc, 1))) == {"PGPU"}


def test_held_name_fits_placements_limit():
    assert tree.held_name("c1_0000:af:00.0") == (
        "c1_0000:af:00.0" + tree.HELD_NAME_SUFFIX)
    long = "h" * tree.MAX_NAME_LENGTH
    held = tree.held_name(long)
    assert len(held) == tree.MAX_NAME_LENGTH
    assert held.endswith(tree.HELD_NAME_SUFFIX)


def test_foreign_providers_are_cyborgs_and_those_without_owner_cyborg():
    name = "c1_0000:af:00.0"
    cyborg = {"uuid": str(uuid.uuid3(uuid.NAMESPACE_DNS, name)),
              "name": name}
    other = {"uuid": str(uuid.uuid4()), "name": name}
    assert tree.is_foreign_provider(cyborg, {"OWNER_CYBORG"})
    assert tree.is_foreign_provider(other, {"CUSTOM_RACK_A"})
    assert not tree.is_foreign_provider(other, {"OWNER_CYBORG"})
