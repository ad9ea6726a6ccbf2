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

import json

import pytest

from cyborg_lite_dra import inventory
from cyborg_lite_dra import slices
from tests.fixtures import kube_apiserver

DRIVER = "accel.cyborg-lite.openstack.org"


def _device(index, **overrides):
    values = dict(
        name=inventory.device_name("FPGA", "0000:5e:00.0", str(index),
                                   f"rp-{index}"),
        rp_uuid=f"e305295a-c440-5123-8bd5-{index:012d}",
        deployable_uuid=f"0cf179a7-f371-46b4-a329-{index:012d}",
        type="FPGA", vendor_id="0x8086", product_id="0x0b30",
        pci_address="0000:5E:00.0", region=str(index), resource_class="FPGA",
        bitstream_id=None, num_accelerators=4, model="PAC Arria10")
    values.update(overrides)
    return inventory.NodeDevice(**values)


@pytest.mark.parametrize("count, slices_expected", [(1, 1), (128, 1),
                                                    (129, 2), (300, 3)])
def test_desired_slices_are_valid_against_the_upstream_schema(
        count, slices_expected):
    wanted = slices.desired([_device(i) for i in range(count)], DRIVER,
                            "node-1.example.org", 4)
    assert len(wanted) == slices_expected
    assert sum(len(s["spec"]["devices"]) for s in wanted) == count
    for body in wanted:
        assert body["spec"]["pool"] == {"name": "node-1.example.org",
                                        "generation": 4,
                                        "resourceSliceCount": slices_expected}
        assert kube_apiserver.validate_slice(body) == []


def test_device_entry_attributes():
    entry = slices.device_entry(_device(0, bitstream_id="bs-1",
                                        num_accelerators=0))
    assert entry["name"] == "fpga-0000-5e-00-0-r0"
    assert "resource.kubernetes.io/pciBusID" not in entry["attributes"]
    assert entry["attributes"]["cardPCIBusID"] == {"string": "0000:5e:00.0"}
    assert entry["attributes"]["bitstreamID"] == {"string": "bs-1"}
    assert "capacity" not in entry


def test_a_whole_card_publishes_the_function_the_container_gets():
    entry = slices.device_entry(_device(0, region=None,
                                        pci_bus_id="0000:AF:00.0"))
    assert entry["attributes"]["resource.kubernetes.io/pciBusID"] == {
        "string": "0000:af:00.0"}
    assert "region" not in entry["attributes"]


def test_the_validator_refuses_what_kube_apiserver_refuses():
    body = slices.desired([_device(0)], DRIVER, "n", 1)[0]
    body["spec"]["devices"][0]["name"] = "Not_A_Label"
    body["spec"]["devices"][0]["attributes"]["x"] = {"string": "a",
                                                     "bool": True}
    problems = kube_apiserver.validate_slice(body)
    assert any("is not a DNS label" in p for p in problems)
    assert any("exactly one value" in p for p in problems)
    body = slices.desired([_device(0)], DRIVER, "n", 1)[0]
    body["spec"]["devices"][0]["typo"] = 1
    assert kube_apiserver.validate_slice(body)


@pytest.mark.parametrize("args, expected", [
    (("FPGA", "0000:5e:00.0", "0", "rp"), "fpga-0000-5e-00-0-r0"),
    (("GPU", "0000:AF:00.0", "gpu0", "rp"), "gpu-0000-af-00-0-rgpu0"),
    (("NIC", None, "0", "rp"), "nic-nopci-r0"),
    (("GPU", "0000:af:00.0", None, "rp"), "gpu-0000-af-00-0"),
])
def test_device_names_are_stable_dns_labels(args, expected):
    assert inventory.device_name(*args) == expected


def test_a_name_too_long_becomes_a_digest():
    name = inventory.device_name("FPGA", "0000:5e:00.0", "r" * 80, "rp-1")
    assert inventory.DNS_LABEL.match(name)
    assert name == inventory.device_name("FPGA", "0000:5e:00.0", "r" * 80,
                                         "rp-1")
    assert name != inventory.device_name("FPGA", "0000:5e:00.0", "r" * 80,
                                         "rp-2")


@pytest.mark.parametrize("overrides, health, taint", [
    ({}, "ok", None),
    ({"device_status": "maintaining"}, "maintaining",
     {"key": f"{DRIVER}/maintaining", "value": "maintaining",
      "effect": "NoSchedule"}),
    ({"device_status": "maintaining", "gone": True}, "gone",
     {"key": f"{DRIVER}/gone", "value": "gone", "effect": "NoExecute"}),
    ({"region_state": "programming"}, "ok", None),
    ({"region_state": "error"}, "error",
     {"key": f"{DRIVER}/error", "value": "error", "effect": "NoSchedule"}),
    ({"region_state": "error", "device_status": "maintaining"}, "error",
     {"key": f"{DRIVER}/error", "value": "error", "effect": "NoSchedule"}),
    ({"device_health": "OK"}, "ok", None),
    ({"device_health": "Warning"}, "warning",
     {"key": f"{DRIVER}/unhealthy", "value": "warning",
      "effect": "NoSchedule"}),
    ({"device_health": "Warning", "device_status": "maintaining"},
     "maintaining", {"key": f"{DRIVER}/maintaining", "value": "maintaining",
                     "effect": "NoSchedule"}),
    ({"device_health": "Critical", "region_state": "error"}, "critical",
     {"key": f"{DRIVER}/unhealthy", "value": "critical",
      "effect": "NoExecute"}),
    ({"device_health": "Critical", "gone": True}, "gone",
     {"key": f"{DRIVER}/gone", "value": "gone", "effect": "NoExecute"}),
])
def test_an_unhealthy_device_is_tainted(overrides, health, taint):
    device = _device(0, **overrides)
    entry = slices.device_entry(device, DRIVER, taints=True)
    assert entry["attributes"]["health"] == {"string": health}
    assert entry.get("taints") == ([taint] if taint else None)
    assert "taints" not in slices.device_entry(device, DRIVER)
    body = slices.desired([device], DRIVER, "n", 1, taints=True)[0]
    assert kube_apiserver.validate_slice(body) == []


def test_a_taint_stamped_by_the_api_server_is_no_change():
    device = _device(0, device_status="maintaining")
    (body,) = slices.desired([device], DRIVER, "n", 1, taints=True)
    stored = json.loads(json.dumps(body))
    stored["spec"]["devices"][0]["taints"][0]["timeAdded"] = (
        "2026-11-28T00:00:00Z")
    assert slices._content(stored) == slices._content(body)


def test_a_partitioned_region_shares_its_handles():
    device = _device(0, num_accelerators=4)
    (body,) = slices.desired([device, _device(1, num_accelerators=1)],
                             DRIVER, "n", 1, partitionable=True)
    assert kube_apiserver.validate_slice(body) == []
    spec = body["spec"]
    assert spec["sharedCounters"] == [{
        "name": device.name, "counters": {"handles": {"value": "4"}}}]
    by_name = {d["name"]: d for d in spec["devices"]}
    assert sorted(by_name) == [device.name] + [
        f"{device.name}-h{i}" for i in range(4)] + ["fpga-0000-5e-00-0-r1"]
    assert by_name[device.name]["consumesCounters"] == [{
        "counterSet": device.name, "counters": {"handles": {"value": "4"}}}]
    share = by_name[f"{device.name}-h2"]
    assert share["consumesCounters"] == [{
        "counterSet": device.name, "counters": {"handles": {"value": "1"}}}]
    assert share["attributes"]["partition"] == {"int": 2}
    assert share["capacity"] == {"accelerators": {"value": "1"}}
    assert share["attributes"]["resourceProviderUUID"] == \
        by_name[device.name]["attributes"]["resourceProviderUUID"]
    assert "consumesCounters" not in by_name["fpga-0000-5e-00-0-r1"]


def test_partitioned_regions_split_at_32_counter_sets():
    devices = [_device(i, num_accelerators=2) for i in range(40)]
    wanted = slices.desired(devices, DRIVER, "n", 1, partitionable=True)
    assert [len(s["spec"]["sharedCounters"]) for s in wanted] == [32, 8]
    for body in wanted:
        assert kube_apiserver.validate_slice(body) == []
        names = {c["name"] for c in body["spec"]["sharedCounters"]}
        assert all(c["counterSet"] in names for d in body["spec"]["devices"]
                   for c in d["consumesCounters"])


def test_without_partitions_a_region_is_one_device():
    (body,) = slices.desired([_device(0, num_accelerators=4)], DRIVER, "n",
                             1)
    assert "sharedCounters" not in body["spec"]
    assert len(body["spec"]["devices"]) == 1


def test_share_names_stay_dns_labels():
    name = "x" * 62
    assert inventory.DNS_LABEL.match(inventory.partition_name(name, 7))
    assert inventory.partition_name(name, 7) != inventory.partition_name(
        name, 8)


def test_a_device_vms_fill_is_withdrawn_without_taints():
    devices = [_device(0, free=0), _device(1, free=3), _device(2)]
    (body,) = slices.desired(devices, DRIVER, "node-1.example.org", 1)
    assert [d["name"] for d in body["spec"]["devices"]] == [
        devices[1].name, devices[2].name]
    assert kube_apiserver.validate_slice(body) == []


def test_a_device_vms_fill_is_tainted_with_taints():
    (body,) = slices.desired([_device(0, free=0, device_status="maintaining"),
                              _device(1, free=1)], DRIVER,
                             "node-1.example.org", 1, taints=True)
    full, free = body["spec"]["devices"]
    assert full["taints"] == [
        {"key": f"{DRIVER}/maintaining", "value": "maintaining",
         "effect": "NoSchedule"},
        {"key": f"{DRIVER}/held-by-vms", "value": "all-units",
         "effect": "NoSchedule"}]
    assert "taints" not in free
    assert kube_apiserver.validate_slice(body) == []


@pytest.mark.parametrize("free, counter, whole", [
    (None, "4", True), (4, "4", True), (9, "4", True), (3, "3", False),
    (1, "1", False)])
def test_a_partitioned_region_counts_the_handles_vms_leave(free, counter,
                                                           whole):
    device = _device(0, free=free)
    (body,) = slices.desired([device], DRIVER, "node-1.example.org", 1,
                             partitionable=True)
    (counters,) = body["spec"]["sharedCounters"]
    assert counters["counters"]["handles"]["value"] == counter
    names = [d["name"] for d in body["spec"]["devices"]]
    assert (device.name in names) is whole
    assert [n for n in names if n != device.name] == [
        f"{device.name}-h{i}" for i in range(4)]
    assert kube_apiserver.validate_slice(body) == []


def test_a_partitioned_region_vms_fill_is_withdrawn_or_tainted():
    device = _device(0, free=0)
    assert slices.desired([device], DRIVER, "node-1.example.org", 1,
                          partitionable=True) == []
    (body,) = slices.desired([device], DRIVER, "node-1.example.org", 1,
                             taints=True, partitionable=True)
    assert body["spec"]["sharedCounters"][0]["counters"]["handles"] == {
        "value": "4"}
    assert len(body["spec"]["devices"]) == 5
    assert all(d["taints"][-1]["key"] == f"{DRIVER}/held-by-vms"
               for d in body["spec"]["devices"])
    assert kube_apiserver.validate_slice(body) == []


@pytest.mark.parametrize("overrides", [{}, {"device_health": "Critical"},
                                       {"gone": True}])
def test_a_region_in_error_is_withdrawn_without_taints(overrides):
    broken = _device(1, region_state="error", **overrides)
    (body,) = slices.desired([_device(0), broken], DRIVER, "n", 1)
    assert [d["name"] for d in body["spec"]["devices"]] == [
        _device(0).name]
    (body,) = slices.desired([_device(0), broken], DRIVER, "n", 1,
                             taints=True)
    assert [d["name"] for d in body["spec"]["devices"]] == [
        _device(0).name, broken.name]


@pytest.mark.parametrize("overrides", [
    {"device_health": "Critical"}, {"device_health": "Warning"},
    {"device_status": "maintaining"}])
def test_other_unhealthy_devices_stay_offered_without_taints(overrides):
    (body,) = slices.desired([_device(0, **overrides)], DRIVER, "n", 1)
    (entry,) = body["spec"]["devices"]
    assert "taints" not in entry
    assert entry["attributes"]["health"]["string"] != "ok"
