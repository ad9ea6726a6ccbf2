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

"""``[pci] device_spec`` in Nova's syntax, ``physical_device_mappings`` in
Neutron's: what operators copy from nova.conf and the SR-IOV agent works."""

import json

import pytest

from cyborg_lite.agent.drivers import pci_spec


def _one(spec):
    specs, errors = pci_spec.parse_device_specs([json.dumps(spec)])
    assert errors == []
    return specs[0]


# The valid examples of Nova's own [pci] device_spec help text.
NOVA_EXAMPLES = [
    {"devname": "eth0", "physical_network": "physnet"},
    {"address": "*:0a:00.*"},
    {"address": ":0a:00.", "physical_network": "physnet1"},
    {"vendor_id": "1137", "product_id": "0071"},
    {"vendor_id": "1137", "product_id": "0071", "address": "0000:0a:00.1",
     "physical_network": "physnet1"},
    {"address": {"domain": ".*", "bus": "02", "slot": "01",
                 "function": "[2-7]"}, "physical_network": "physnet1"},
    {"devname": "eth0", "physical_network": "physnet1", "trusted": "true"},
    {"vendor_id": "a2d6", "product_id": "15b3", "remote_managed": "true"},
    {"vendor_id": "1002", "product_id": "6929", "address": "0000:82:00.0",
     "resource_class": "PGPU", "traits": "HW_GPU_API_VULKAN,my-awesome-gpu"},
]


@pytest.mark.parametrize("spec", NOVA_EXAMPLES)
def test_parse_accepts_nova_examples(spec):
    specs, errors = pci_spec.parse_device_specs([json.dumps(spec)])

    assert errors == [] and len(specs) == 1


def test_parse_list_value_gives_one_spec_per_item():
    specs, errors = pci_spec.parse_device_specs(
        ['[{"vendor_id": "10de"}, {"vendor_id": "8086"}]',
         '{"product_id": "4943"}'])

    assert errors == []
    assert [(s.vendor_id, s.product_id) for s in specs] == [
        ("0x10de", "*"), ("0x8086", "*"), ("*", "0x4943")]


def test_glob_address_wildcards_match_any_field():
    spec = _one({"address": "*:0a:00.*"})

    assert spec.match("0000:0a:00.3", "0x8086", "0x154c")
    assert spec.match("0001:0a:00.0", "0x8086", "0x154c")
    assert not spec.match("0000:0b:00.0", "0x8086", "0x154c")


def test_glob_address_left_off_fields_are_wildcards():
    spec = _one({"address": ":0a:00."})

    assert spec.match("0000:0a:00.7", "0x8086", "0x154c")
    assert not spec.match("0000:0a:01.0", "0x8086", "0x154c")


def test_regex_address_matches_function_range():
    spec = _one({"address": {"bus": "02", "slot": "01",
                             "function": "[2-7]"}})

    assert spec.match("0000:02:01.2", "0x15b3", "0x1018")
    assert not spec.match("0000:02:01.1", "0x15b3", "0x1018")


def test_pf_address_matches_its_vfs_too():
    spec = _one({"address": "0000:18:00.0"})

    assert spec.match("0000:18:02.5", "0x8086", "0x154c",
                      physfn="0000:18:00.0")
    assert not spec.match("0000:18:0a.0", "0x8086", "0x154c",
                          physfn="0000:18:00.1")


def test_ids_compare_as_hex_whatever_their_spelling():
    spec = _one({"vendor_id": "0x10DE", "product_id": "2331"})

    assert (spec.vendor_id, spec.product_id) == ("0x10de", "0x2331")
    assert spec.match("0000:41:00.0", "0x10de", "0x2331")
    assert not spec.match("0000:41:00.0", "0x10de", "0x1eb8")


def test_resource_class_and_traits_normalized_as_nova_does():
    spec = _one({"resource_class": "my gpu", "traits":
                 "HW_GPU_API_VULKAN,my-awesome-gpu"})
    standard = _one({"resource_class": "PGPU"})
    custom = _one({"resource_class": "CUSTOM_QAT_VF"})

    assert spec.resource_class == "CUSTOM_MY_GPU"
    assert spec.traits == ("CUSTOM_MY_AWESOME_GPU", "HW_GPU_API_VULKAN")
    assert standard.resource_class == "PGPU"
    assert custom.resource_class == "CUSTOM_QAT_VF"


@pytest.mark.parametrize("value, expected", [
    ("{not json", "is not JSON"),
    ('"a string"', "must be a JSON object"),
    ('{"vendor_id": "10xe"}', "vendor_id '10xe' is not a hex number"),
    ('{"product_id": 4943}', "product_id must be a string of hex digits"),
    ('{"vendor_id": "10de0"}', "vendor_id '10de0' is greater than ffff"),
    ('{"address": "0000:0a:00.8"}', "address function '8' is greater"),
    ('{"address": "0000:0a:20.0"}', "address slot '20' is greater"),
    ('{"address": "1:0000:0a:00.0"}', "more than three"),
    ('{"address": {"bus": "("}}', "address bus '(' is not a regular"),
    ('{"address": {"bsu": "02"}}', "unknown field(s) bsu"),
    ('{"address": "0000:0a:00.0", "devname": "eth0"}',
     "address and devname exclude each other"),
    ('{"physical_netwrok": "physnet1"}', "unknown key(s) physical_netwrok"),
    ('{"physical_network": ""}', "physical_network must be a non-empty"),
    ('{"traits": ["A"]}', "traits must be a comma separated string"),
    ('{"device_type": "type-VF"}', "device_type 'type-VF' is not one of"),
])
def test_parse_malformed_spec_names_what_is_wrong(value, expected):
    specs, errors = pci_spec.parse_device_specs(
        [value, '{"vendor_id": "8086"}'])

    assert [s.vendor_id for s in specs] == ["0x8086"]
    assert len(errors) == 1
    assert expected in errors[0]
    assert errors[0].startswith("[pci] device_spec ")


def test_physical_device_mappings_neutron_syntax():
    mapping, errors = pci_spec.parse_physical_device_mappings(
        ["physnet1:ens41f0np0", "physnet2:ens41f1np1", "physnet1:ens2f0"])

    assert errors == []
    assert mapping == {"ens41f0np0": "physnet1", "ens41f1np1": "physnet2",
                       "ens2f0": "physnet1"}


@pytest.mark.parametrize("item, expected", [
    ("physnet1", "expected <physical_network>:<PF netdev>"),
    (":ens1f0", "expected <physical_network>:<PF netdev>"),
    ("physnet2:ens1f0", "ens1f0 is mapped to physnet1 already"),
])
def test_physical_device_mappings_bad_item_is_named(item, expected):
    mapping, errors = pci_spec.parse_physical_device_mappings(
        ["physnet1:ens1f0", item])

    assert mapping == {"ens1f0": "physnet1"}
    assert len(errors) == 1 and expected in errors[0]
    assert repr(item) in errors[0]
