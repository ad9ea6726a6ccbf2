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

"""The node's ResourceSlices in the (stand-in) API server: what the plugin
publishes from real cyborg_lite, every write valid against the upstream
OpenAPI schema, stable across restarts, current as the inventory changes."""

import os
import uuid

import pytest

from accel_common import inventory
from cyborg_lite.agent.drivers import sim
from cyborg_lite.inventory import apply as inventory_apply
from tests.functional.cyborg_lite_dra import env


def _node_slices(apiserver, node):
    return [s for s in apiserver.slices.values()
            if s["spec"]["nodeName"] == node]


def _wait_devices(apiserver, node, accept, what):
    """Wait until ``accept(devices)`` is true of the devices of the node's
    one slice; returns them."""
    def accepted():
        (slice_,) = _node_slices(apiserver, node)
        devices = slice_["spec"]["devices"]
        return accept(devices) and devices

    return env.wait(accepted, what)


def _writes_across_publish_rounds(apiserver):
    """The API server's count of slice writes before and after three more
    publish rounds of the plugin."""
    writes = len(apiserver.writes)
    lists = len(apiserver.requests)
    env.wait(lambda: len(apiserver.requests) > lists + 2,
             "more publish rounds")
    return writes, len(apiserver.writes)


def test_the_node_s_deployables_are_published_valid(plugin, cyborg_lite,
                                                    kube_apiserver):
    (slice_,) = env.wait(lambda: _node_slices(kube_apiserver, plugin.node),
                      "the slice")
    spec = slice_["spec"]
    assert spec["driver"] == env.DRIVER
    assert spec["pool"] == {"name": plugin.node, "generation": 1,
                            "resourceSliceCount": 1}
    by_name = {d["name"]: d for d in spec["devices"]}
    assert sorted(by_name) == ["fpga-0000-0f-00-0-r0", "fpga-0000-0f-00-0-r1"]
    attributes = by_name["fpga-0000-0f-00-0-r1"]["attributes"]
    # A region's container gets one of its VFs, known only once bound.
    assert "resource.kubernetes.io/pciBusID" not in attributes
    assert attributes["cardPCIBusID"] == {"string": cyborg_lite.pci}
    assert attributes["resourceProviderUUID"] == {
        "string": cyborg_lite.rps[1]}
    assert attributes["type"] == {"string": "FPGA"}
    assert attributes["region"] == {"string": "1"}
    assert attributes["vendorID"] == {"string": "0x8086"}
    assert attributes["productID"] == {"string": "0x0b30"}
    assert by_name["fpga-0000-0f-00-0-r1"]["capacity"] == {
        "accelerators": {"value": "2"}}
    assert kube_apiserver.writes
    assert all(problems == [] for _, _, problems in kube_apiserver.writes)


@pytest.mark.parametrize("cyborg_lite", [{"gpu": True}], indirect=True)
def test_a_whole_gpu_is_published_with_its_function(plugin, cyborg_lite,
                                                    kube_apiserver):
    (slice_,) = env.wait(lambda: _node_slices(kube_apiserver, plugin.node),
                         "the slice")
    by_name = {d["name"]: d for d in slice_["spec"]["devices"]}
    assert sorted(by_name) == ["fpga-0000-0f-00-0-r0", "fpga-0000-0f-00-0-r1",
                               "gpu-0000-af-00-0"]
    attributes = by_name["gpu-0000-af-00-0"]["attributes"]
    assert attributes["resource.kubernetes.io/pciBusID"] == {
        "string": env.GPU_PCI}
    assert attributes["type"] == {"string": "GPU"}
    assert attributes["resourceClass"] == {"string": "PGPU"}
    assert "region" not in attributes
    assert by_name["gpu-0000-af-00-0"]["capacity"] == {
        "accelerators": {"value": "1"}}
    assert all(problems == [] for _, _, problems in kube_apiserver.writes)


def test_a_restart_publishes_the_same_names_and_writes_nothing(
        plugin, kube_apiserver):
    env.wait(lambda: _node_slices(kube_apiserver, plugin.node), "the slice")
    before = [dict(s) for s in kube_apiserver.slices.values()]
    writes = len(kube_apiserver.writes)
    plugin.stop()
    lists = len(kube_apiserver.requests)
    plugin.start()
    env.wait(lambda: len(kube_apiserver.requests) > lists + 1, "a publish")
    assert len(kube_apiserver.writes) == writes
    assert list(kube_apiserver.slices.values()) == before


def test_inventory_changes_reach_the_slices_with_a_new_generation(
        plugin, cyborg_lite, kube_apiserver):
    env.wait(lambda: _node_slices(kube_apiserver, plugin.node), "the slice")
    document = cyborg_lite.document
    device = document["devices"][0]
    device["regions"].append({
        "id": "2", "resource_class": "FPGA", "function_id": None,
        "rp_uuid": inventory.region_rp_uuid(document["node_uuid"],
                                            device["id"], "2"),
        "attach_handles": [{"type": "PCI", "pci_address": "0000:30:00.1"}]})
    inventory_apply.apply_document(cyborg_lite.db, document)

    def grown():
        (slice_,) = _node_slices(kube_apiserver, plugin.node)
        return len(slice_["spec"]["devices"]) == 3 and slice_

    slice_ = env.wait(grown, "the third region")
    assert slice_["spec"]["pool"]["generation"] == 2
    assert all(problems == [] for _, _, problems in kube_apiserver.writes)


def test_a_slice_deleted_behind_its_back_is_published_again(
        plugin, kube_apiserver):
    (slice_,) = env.wait(lambda: _node_slices(kube_apiserver, plugin.node),
                      "the slice")
    name = slice_["metadata"]["name"]
    uid = slice_["metadata"]["uid"]
    del kube_apiserver.slices[name]

    again = env.wait(lambda: kube_apiserver.slices.get(name), "the new slice")
    assert again["metadata"]["uid"] != uid
    assert again["spec"]["pool"]["generation"] == 1


def test_a_refusing_api_server_is_logged_and_retried(
        plugin_factory, kube_apiserver):
    plugin = plugin_factory()
    kube_apiserver.token = uuid.uuid4().hex
    plugin.start()
    env.wait(lambda: "Publishing the ResourceSlices" in plugin.log(),
          "the logged failure")
    assert "(401)" in plugin.log()
    assert kube_apiserver.slices == {}


def _device_uuid(cyborg_lite):
    status, body = cyborg_lite.call(
        "GET", f"/v2/devices?hostname={cyborg_lite.host}", env.ADMIN)
    assert status == 200, body
    (device,) = body["devices"]
    return device["uuid"]


def _device_action(cyborg_lite, action):
    """``POST /v2/devices/{uuid}/<action>`` (``disable``, ``enable``) of
    the node's device; ``(status, body)``."""
    return cyborg_lite.call(
        "POST", f"/v2/devices/{_device_uuid(cyborg_lite)}/{action}",
        env.ADMIN)


def _untainted(devices):
    return not any(d.get("taints") for d in devices)


def _maintaining(devices):
    return all(d["attributes"]["health"] == {"string": "maintaining"}
               for d in devices)


def test_a_disabled_device_is_tainted_and_untainted_on_enable(
        plugin_factory, cyborg_lite, kube_apiserver):
    plugin = plugin_factory(**{"dra.device_taints": "true"}).start()
    env.wait(lambda: _node_slices(kube_apiserver, plugin.node), "the slice")

    status, body = _device_action(cyborg_lite, "disable")
    assert status in (200, 202, 204), body

    for device in _wait_devices(
            kube_apiserver, plugin.node,
            lambda devices: all(d.get("taints") for d in devices),
            "the taints"):
        assert device["taints"] == [{
            "key": f"{env.DRIVER}/maintaining", "value": "maintaining",
            "effect": "NoSchedule"}]
        assert device["attributes"]["health"] == {"string": "maintaining"}

    status, body = _device_action(cyborg_lite, "enable")
    assert status in (200, 202, 204), body

    for device in _wait_devices(kube_apiserver, plugin.node, _untainted,
                                "the taints gone"):
        assert device["attributes"]["health"] == {"string": "ok"}
    assert all(problems == [] for _, _, problems in kube_apiserver.writes)


def test_without_device_taints_a_disabled_device_says_so_in_health(
        plugin, cyborg_lite, kube_apiserver):
    env.wait(lambda: _node_slices(kube_apiserver, plugin.node), "the slice")
    status, body = _device_action(cyborg_lite, "disable")
    assert status in (200, 202, 204), body

    assert not any(d.get("taints") for d in _wait_devices(
        kube_apiserver, plugin.node, _maintaining, "the health"))


def _program(cyborg_lite, rp_uuid, op):
    status, body = cyborg_lite.call(
        "GET", f"/v2/deployables?rp_uuid={rp_uuid}", env.ADMIN)
    assert status == 200, body
    (deployable,) = body["deployables"]
    patch = [{"op": op, "path": "/program"}]
    if op == "add":
        patch[0]["value"] = [{"function_id": env.FUNCTIONS[0]}]
    return cyborg_lite.call(
        "PATCH", f"/v2/deployables/{deployable['uuid']}/program", env.ADMIN,
        patch)


def _break_region(cyborg_lite, rp_uuid):
    """Program the region with the sim agent failing: it ends in error."""
    os.makedirs(cyborg_lite.state_dir, exist_ok=True)
    fault = os.path.join(cyborg_lite.state_dir, sim.FAULT_FILE)
    with open(fault, "w") as handle:
        handle.write("bitstream rejected by the card")
    status, body = _program(cyborg_lite, rp_uuid, "add")
    assert status >= 400 and "bitstream rejected" in str(body), body
    os.unlink(fault)


def test_a_region_in_error_is_tainted_until_reset(
        plugin_factory, cyborg_lite, kube_apiserver):
    plugin = plugin_factory(**{"dra.device_taints": "true"}).start()
    env.wait(lambda: _node_slices(kube_apiserver, plugin.node), "the slice")
    _break_region(cyborg_lite, cyborg_lite.rps[1])

    def tainted():
        (slice_,) = _node_slices(kube_apiserver, plugin.node)
        by_name = {d["name"]: d for d in slice_["spec"]["devices"]}
        return by_name["fpga-0000-0f-00-0-r1"].get("taints") and by_name

    by_name = env.wait(tainted, "the taint of the broken region")
    assert by_name["fpga-0000-0f-00-0-r1"]["taints"] == [{
        "key": f"{env.DRIVER}/error", "value": "error",
        "effect": "NoSchedule"}]
    assert by_name["fpga-0000-0f-00-0-r1"]["attributes"]["health"] == {
        "string": "error"}
    assert "taints" not in by_name["fpga-0000-0f-00-0-r0"]

    status, body = _program(cyborg_lite, cyborg_lite.rps[1], "remove")
    assert status == 200, body

    for device in _wait_devices(kube_apiserver, plugin.node, _untainted,
                                "the taint gone"):
        assert device["attributes"]["health"] == {"string": "ok"}
    assert all(problems == [] for _, _, problems in kube_apiserver.writes)


def test_without_device_taints_a_region_in_error_is_withdrawn(
        plugin, cyborg_lite, kube_apiserver):
    env.wait(lambda: _node_slices(kube_apiserver, plugin.node), "the slice")
    _break_region(cyborg_lite, cyborg_lite.rps[0])

    def withdrawn():
        (slice_,) = _node_slices(kube_apiserver, plugin.node)
        names = [d["name"] for d in slice_["spec"]["devices"]]
        return names == ["fpga-0000-0f-00-0-r1"]

    env.wait(withdrawn, "the broken region withdrawn")
    status, body = _program(cyborg_lite, cyborg_lite.rps[0], "remove")
    assert status == 200, body

    def back():
        (slice_,) = _node_slices(kube_apiserver, plugin.node)
        return len(slice_["spec"]["devices"]) == 2

    env.wait(back, "the region offered again")


def test_two_claims_share_a_partitioned_region(plugin_factory, cyborg_lite,
                                               kube_apiserver):
    plugin = plugin_factory(**{"dra.partitionable_devices": "true"}).start()
    (slice_,) = env.wait(lambda: _node_slices(kube_apiserver, plugin.node),
                         "the slice")
    names = sorted(d["name"] for d in slice_["spec"]["devices"])
    region = "fpga-0000-0f-00-0-r0"
    assert names == [region, f"{region}-h0", f"{region}-h1",
                     "fpga-0000-0f-00-0-r1", "fpga-0000-0f-00-0-r1-h0",
                     "fpga-0000-0f-00-0-r1-h1"]
    assert {c["name"] for c in slice_["spec"]["sharedCounters"]} == {
        region, "fpga-0000-0f-00-0-r1"}
    profile = cyborg_lite.profile("nlb3")
    # As the scheduler allocates two shares whose counters fit the region.
    claims = [env.allocate(kube_apiserver, plugin, f"{region}-h{i}", profile)
              for i in range(2)]

    answers = plugin.prepare(claims)

    assert [answers[c[1]][0] for c in claims] == ["", ""]
    arqs = [cyborg_lite.arqs_of(c[1]) for c in claims]
    assert [a["device_rp_uuid"] for (a,) in arqs] == [cyborg_lite.rps[0]] * 2
    assert len({env.handle_address(a) for (a,) in arqs}) == 2
    for claim in claims:
        (status,) = env.device_status(kube_apiserver, claim)
        assert status["device"].startswith(f"{region}-h")
    assert all(problems == [] for _, _, problems in kube_apiserver.writes)
    assert plugin.unprepare(claims) == {c[1]: "" for c in claims}


def test_an_api_server_without_partitions_gets_whole_regions(
        plugin_factory, kube_apiserver):
    kube_apiserver.gates_off.add("DRAPartitionableDevices")
    plugin = plugin_factory(**{"dra.partitionable_devices": "true"}).start()

    def whole():
        found = _node_slices(kube_apiserver, plugin.node)
        return (found and len(found[0]["spec"]["devices"]) == 2
                and found[0])

    slice_ = env.wait(whole, "whole regions")
    assert sorted(d["name"] for d in slice_["spec"]["devices"]) == [
        "fpga-0000-0f-00-0-r0", "fpga-0000-0f-00-0-r1"]
    assert "DRAPartitionableDevices feature gate off" in plugin.log()
    assert "publishing without them" in plugin.log()
    before, after = _writes_across_publish_rounds(kube_apiserver)
    assert after == before


def test_an_api_server_without_taints_gets_the_health_attribute_only(
        plugin_factory, cyborg_lite, kube_apiserver):
    kube_apiserver.gates_off.add("DRADeviceTaints")
    plugin = plugin_factory(**{"dra.device_taints": "true"}).start()
    env.wait(lambda: _node_slices(kube_apiserver, plugin.node), "the slice")
    status, body = _device_action(cyborg_lite, "disable")
    assert status in (200, 202, 204), body
    env.wait(lambda: "DRADeviceTaints feature gate off" in plugin.log(),
             "the logged fallback")

    _wait_devices(kube_apiserver, plugin.node, _maintaining, "the health")
    before, after = _writes_across_publish_rounds(kube_apiserver)
    assert after == before
