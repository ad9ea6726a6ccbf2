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

"""Discovered attach handles merged into the inventory document."""

import copy
import json

import pytest

from accel_common import exception as common_exception
from cyborg_lite.agent import handles
from cyborg_lite.agent.drivers import sim


@pytest.fixture
def document():
    with open(sim.default_inventory_file()) as handle:
        document = json.load(handle)
    # As Ironic reports it: no handles out of band.
    for device in document["devices"]:
        for region in device["regions"]:
            region.pop("attach_handles")
    return document


def _fpga(regions):
    return {"driver": "intel_opae", "type": "FPGA",
            "pci_address": "0000:5E:00.0", "vendor_id": "0x8086",
            "product_id": "0x0b30", "program_mode": "dynamic",
            "regions": regions}


def test_handles_are_matched_by_pf_address_and_region(document):
    original = copy.deepcopy(document)
    discovered = [_fpga([
        {"id": "1", "function_id": None, "state": "ready",
         "attach_handles": [{"type": "PCI", "pci_address": "0000:5e:00.2"}]},
        {"id": "0", "function_id": None, "state": "ready",
         "attach_handles": [{"type": "PCI", "pci_address": "0000:5e:00.1"}]},
    ])]

    merged, unmatched = handles.merge_discovered(document, discovered)

    regions = merged["devices"][0]["regions"]
    assert regions[0]["attach_handles"] == [
        {"type": "PCI", "pci_address": "0000:5e:00.1"}]
    assert regions[1]["attach_handles"] == [
        {"type": "PCI", "pci_address": "0000:5e:00.2"}]
    assert "attach_handles" not in merged["devices"][1]["regions"][0]
    assert unmatched == []
    assert document == original


def test_single_region_devices_match_whatever_the_region_id(document):
    gpu = {"driver": "nvidia_mdev", "type": "GPU",
           "pci_address": "0000:af:00.0", "regions": [
               {"id": "whole", "attach_handles": [
                   {"type": "MDEV", "pci_address": "0000:af:00.0",
                    "mdev_type": "nvidia-222"}] * 2}]}

    merged, _ = handles.merge_discovered(document, [gpu])

    assert merged["devices"][1]["regions"][0]["attach_handles"] == [
        {"type": "MDEV", "pci_address": "0000:af:00.0",
         "mdev_type": "nvidia-222"}] * 2


def test_devices_unknown_to_the_document_are_reported(document):
    extra = _fpga([])
    extra["pci_address"] = "0000:3b:00.0"

    _, unmatched = handles.merge_discovered(document, [extra])

    assert unmatched == ["0000:3b:00.0"]


def test_a_handle_claimed_twice_is_rejected(document):
    same = [{"type": "PCI", "pci_address": "0000:5e:00.1"}]
    discovered = [_fpga([
        {"id": "0", "attach_handles": same},
        {"id": "1", "attach_handles": same}])]

    with pytest.raises(common_exception.InvalidInventory,
                       match="listed twice"):
        handles.merge_discovered(document, discovered)


def _qat(region):
    return {"driver": "pci", "type": "QAT", "pci_address": "0000:5e:00.0",
            "vendor_id": "0x8086", "product_id": "0x4942",
            "program_mode": "single", "regions": [dict(
                {"id": "0", "function_id": None, "state": "ready",
                 "attach_handles": [{"type": "PCI",
                                     "pci_address": "0000:5e:00.1"}]},
                **region)]}


def test_the_operators_spec_class_and_traits_are_taken(document):
    del document["devices"][0]["regions"][1:]
    classes = [r["resource_class"] for r in document["devices"][0]["regions"]]

    merged, _ = handles.merge_discovered(document, [_qat({
        "resource_class": "CUSTOM_QAT_VF",
        "traits": ["CUSTOM_QAT_GEN4", "CUSTOM_QAT_GEN4"]})])
    (region,) = merged["devices"][0]["regions"]
    assert region["resource_class"] == "CUSTOM_QAT_VF"
    assert region["traits"] == ["CUSTOM_QAT_GEN4"]

    # NOTE(test): a spec without them leaves the document's class.
    merged, _ = handles.merge_discovered(document, [_qat({})])
    (region,) = merged["devices"][0]["regions"]
    assert [region["resource_class"]] == classes
    assert "traits" not in region
