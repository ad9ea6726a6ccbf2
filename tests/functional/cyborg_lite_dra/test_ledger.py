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

"""VMs and pods on one node share its accelerators through one ledger, a
real Placement: a claim's units are allocated there before its bind (so
Nova's scheduler, asking GET /allocation_candidates, no longer sees them),
and what VMs hold there is not offered in the ResourceSlices (so the
Kubernetes scheduler, here the stand-in's, does not allocate it)."""

import threading
import types
import uuid

import pytest

from tests.fixtures import databases
from tests.fixtures import placement as placement_fixture
from tests.functional.cyborg_lite_dra import env

REGION0 = "fpga-0000-0f-00-0-r0"
REGION1 = "fpga-0000-0f-00-0-r1"
MV = {"openstack-api-version": "placement 1.39"}


def _candidates(node, amount=1):
    """The regions Nova's scheduler is offered for ``amount`` FPGA on the
    node."""
    body = node.api.get(f"/allocation_candidates?resources=FPGA:{amount}"
                        f"&in_tree={node.root}")
    return {rp for request in body["allocation_requests"]
            for rp in request["allocations"]}


def _vm(node, rp_uuid, amount, instance=None):
    """Allocate as Nova's scheduler does for an instance; returns the
    response."""
    instance = instance or str(uuid.uuid4())
    response = node.api.request("PUT", f"/allocations/{instance}", {
        "allocations": {rp_uuid: {"resources": {"FPGA": amount}}},
        "consumer_generation": None, "project_id": "vm-project",
        "user_id": "vm-user", "consumer_type": "INSTANCE"}, headers=MV)
    response.instance = instance
    return response


def _devices(apiserver, node_name):
    found = [s for s in apiserver.slices.values()
             if s["spec"]["nodeName"] == node_name]
    return {d["name"]: d for s in found for d in s["spec"]["devices"]}


def test_a_pod_s_units_are_not_offered_to_vms(node, kube_apiserver):
    plugin = node.plugin().start()
    env.wait(lambda: _devices(kube_apiserver, plugin.node), "the slice")
    assert _candidates(node) == set(node.cyborg.rps)
    claim = env.allocate(kube_apiserver, plugin, REGION0,
                         node.cyborg.profile("nlb3", amount=2))

    assert plugin.prepare([claim])[claim[1]][0] == ""

    held = node.api.get(f"/allocations/{claim[1]}")
    assert held["allocations"] == {node.cyborg.rps[0]: {
        "resources": {"FPGA": 2}, "generation": held["allocations"][
            node.cyborg.rps[0]]["generation"]}}
    assert held["consumer_type"] == "DRA_CLAIM"
    assert held["project_id"] == "k8s-namespace-default"
    # The region is full: Nova's scheduler is offered only the other one.
    assert _candidates(node) == {node.cyborg.rps[1]}
    assert _vm(node, node.cyborg.rps[0], 1).status_code == 409
    # The claim's own units are not taken for VMs': the region stays.
    assert REGION0 in _devices(kube_apiserver, plugin.node)

    assert plugin.unprepare([claim]) == {claim[1]: ""}
    assert node.api.get(f"/allocations/{claim[1]}")["allocations"] == {}
    assert _candidates(node) == set(node.cyborg.rps)


def test_a_region_vms_fill_is_withdrawn_until_it_frees(node,
                                                       kube_apiserver):
    plugin = node.plugin().start()
    env.wait(lambda: REGION1 in _devices(kube_apiserver, plugin.node),
             "the slice")
    vm = _vm(node, node.cyborg.rps[1], 2)
    assert vm.status_code == 204, vm.text

    env.wait(lambda: REGION1 not in _devices(kube_apiserver, plugin.node),
             "the full region withdrawn")
    with pytest.raises(LookupError):
        kube_apiserver.schedule("default", "wants-r1", env.DRIVER,
                                plugin.node,
                                select=lambda d: d["name"] == REGION1)
    assert REGION0 in _devices(kube_apiserver, plugin.node)

    node.api.request("DELETE", f"/allocations/{vm.instance}")
    env.wait(lambda: REGION1 in _devices(kube_apiserver, plugin.node),
             "the region published again")
    claim = kube_apiserver.schedule("default", "wants-r1", env.DRIVER,
                                    plugin.node,
                                    select=lambda d: d["name"] == REGION1)
    results = claim["status"]["allocation"]["devices"]["results"]
    assert [r["device"] for r in results] == [REGION1]
    assert all(p == [] for _, _, p in kube_apiserver.writes)


def test_with_device_taints_a_full_region_is_tainted(node, kube_apiserver):
    plugin = node.plugin(**{"dra.device_taints": "true"}).start()
    env.wait(lambda: REGION1 in _devices(kube_apiserver, plugin.node),
             "the slice")
    vm = _vm(node, node.cyborg.rps[1], 2)
    assert vm.status_code == 204, vm.text

    devices = env.wait(
        lambda: (lambda d: d.get(REGION1, {}).get("taints") and d)(
            _devices(kube_apiserver, plugin.node)), "the taint")
    assert devices[REGION1]["taints"] == [{
        "key": f"{env.DRIVER}/held-by-vms", "value": "all-units",
        "effect": "NoSchedule"}]
    assert "taints" not in devices[REGION0]
    claim = kube_apiserver.schedule("default", "c0", env.DRIVER,
                                    plugin.node)
    assert claim["status"]["allocation"]["devices"]["results"][0][
        "device"] == REGION0
    with pytest.raises(LookupError):
        kube_apiserver.schedule("default", "c1", env.DRIVER, plugin.node)

    node.api.request("DELETE", f"/allocations/{vm.instance}")
    env.wait(lambda: not _devices(kube_apiserver, plugin.node)[REGION1].get(
        "taints"), "the taint gone")
    assert all(p == [] for _, _, p in kube_apiserver.writes)


def test_partitioned_region_counts_only_what_vms_leave(node,
                                                       kube_apiserver):
    plugin = node.plugin(**{"dra.partitionable_devices": "true"}).start()
    env.wait(lambda: REGION1 in _devices(kube_apiserver, plugin.node),
             "the slice")
    vm = _vm(node, node.cyborg.rps[1], 1)
    assert vm.status_code == 204, vm.text

    def counted():
        found = [s for s in kube_apiserver.slices.values()
                 if s["spec"]["nodeName"] == plugin.node]
        counters = {c["name"]: c["counters"]["handles"]["value"]
                    for s in found for c in s["spec"]["sharedCounters"]}
        return counters.get(REGION1) == "1" and found

    env.wait(counted, "one handle left in the counter")
    devices = _devices(kube_apiserver, plugin.node)
    # The whole region would need both handles.
    assert REGION1 not in devices
    assert {f"{REGION1}-h0", f"{REGION1}-h1"} <= set(devices)

    def share_of_r1(device):
        return device["name"].startswith(f"{REGION1}-h")

    claim = kube_apiserver.schedule("default", "s0", env.DRIVER,
                                    plugin.node, select=share_of_r1)
    with pytest.raises(LookupError):
        kube_apiserver.schedule("default", "s1", env.DRIVER, plugin.node,
                                select=share_of_r1)
    assert claim["status"]["allocation"]["devices"]["results"][0][
        "device"].startswith(f"{REGION1}-h")
    assert all(p == [] for _, _, p in kube_apiserver.writes)


def test_a_claim_and_a_vm_race_for_the_last_unit(node, kube_apiserver):
    plugin = node.plugin().start()
    env.wait(lambda: _devices(kube_apiserver, plugin.node), "the slice")
    first = _vm(node, node.cyborg.rps[0], 1)
    assert first.status_code == 204, first.text
    claim = env.allocate(kube_apiserver, plugin, REGION0,
                         node.cyborg.profile("nlb3"))
    start = threading.Barrier(2)
    outcome = {}

    def pod():
        start.wait()
        outcome["claim"] = plugin.prepare([claim])[claim[1]][0]

    def vm():
        start.wait()
        outcome["vm"] = _vm(node, node.cyborg.rps[0], 1)

    threads = [threading.Thread(target=pod), threading.Thread(target=vm)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    claim_won = outcome["claim"] == ""
    vm_won = outcome["vm"].status_code == 204
    assert claim_won != vm_won, (outcome["claim"], outcome["vm"].text)
    usages = node.api.get(
        f"/resource_providers/{node.cyborg.rps[0]}/usages")["usages"]
    assert usages == {"FPGA": 2}
    if vm_won:
        assert "Placement refused to allocate 1 FPGA" in outcome["claim"]
        assert "VMs or other claims hold the units" in outcome["claim"]
        assert node.cyborg.arqs_of(claim[1]) == []
        assert node.api.get(f"/allocations/{claim[1]}")["allocations"] == {}
    else:
        assert outcome["vm"].status_code == 409


def test_a_restart_keeps_a_prepared_claim_s_units(node, kube_apiserver):
    plugin = node.plugin().start()
    env.wait(lambda: _devices(kube_apiserver, plugin.node), "the slice")
    claim = env.allocate(kube_apiserver, plugin, REGION0,
                         node.cyborg.profile("nlb3", amount=2))
    assert plugin.prepare([claim])[claim[1]][0] == ""

    plugin.stop()
    plugin.start()
    assert plugin.prepare([claim])[claim[1]][0] == ""
    assert node.api.get(f"/allocations/{claim[1]}")["allocations"]
    assert _candidates(node) == {node.cyborg.rps[1]}

    plugin.stop()
    plugin.start()
    assert plugin.unprepare([claim]) == {claim[1]: ""}
    assert node.api.get(f"/allocations/{claim[1]}")["allocations"] == {}
    assert _candidates(node) == set(node.cyborg.rps)
    assert plugin.checkpoint()["claims"] == {}


def test_a_claim_whose_bind_fails_frees_its_units(node, kube_apiserver):
    plugin = node.plugin().start()
    env.wait(lambda: _devices(kube_apiserver, plugin.node), "the slice")
    status, body = node.cyborg.call(
        "GET", f"/v2/devices?hostname={node.cyborg.host}", env.ADMIN)
    (device,) = body["devices"]
    status, body = node.cyborg.call(
        "POST", f"/v2/devices/{device['uuid']}/disable", env.ADMIN)
    assert status in (200, 202, 204), body
    claim = env.allocate(kube_apiserver, plugin, REGION0,
                         node.cyborg.profile("nlb3"))

    error = plugin.prepare([claim])[claim[1]][0]

    # Allocated, then refused by cyborg_lite's bind: both undone.
    assert "maintaining device" in error
    assert "Allocated {" in plugin.log_text()
    assert node.api.get(f"/allocations/{claim[1]}")["allocations"] == {}
    assert _candidates(node) == set(node.cyborg.rps)


ROUNDS = 3


def _report(api, document):
    """The node's tree as the reporter writes it: the compute node named
    after the host, one provider per region with its handles as FPGA."""
    root = str(uuid.uuid4())
    api.post("/resource_providers", {"name": document["host"],
                                     "uuid": root})
    for device in document["devices"]:
        for region in device["regions"]:
            rp = region["rp_uuid"]
            total = len(region["attach_handles"])
            api.post("/resource_providers", {
                "name": f"{document['host']}_{device['id']}_{region['id']}",
                "uuid": rp, "parent_provider_uuid": root})
            generation = api.get(f"/resource_providers/{rp}")["generation"]
            api.put(f"/resource_providers/{rp}/inventories", {
                "resource_provider_generation": generation,
                "inventories": {region["resource_class"]: {
                    "total": total, "max_unit": total}}})
    return root


@pytest.mark.mariadb
def test_the_race_for_the_last_unit_on_a_deployed_placement(
        tmp_path, kube_apiserver):
    """As deployed (gunicorn workers with threads on MariaDB, one
    allocation write per request as the install guide asks), the VM's
    write sent the moment the claim's ARQs exist, i.e. while the plugin
    allocates: in every round exactly one of the two gets the unit."""
    server = env.CyborgLite(tmp_path / "cyborg")
    plugin = None
    try:
        with databases.database("mariadb", tmp_path) as url, \
                placement_fixture.threaded_placement(
                    tmp_path / "placement", url,
                    {"placement": {"allocation_conflict_retry_count": 1}}
                ) as api:
            root = _report(api, server.document)
            node = types.SimpleNamespace(api=api, root=root, cyborg=server)
            plugin = env.Plugin(tmp_path / "plugin", server, kube_apiserver,
                                **{"placement.auth_type": "admin_token",
                                   "placement.endpoint": api.url,
                                   "placement.token": "admin"}).start()
            profile = server.profile("nlb3")
            rp = server.rps[0]
            for _ in range(ROUNDS):
                first = _vm(node, rp, 1)
                assert first.status_code == 204, first.text
                claim = env.allocate(kube_apiserver, plugin, REGION0,
                                     profile)
                outcome = {}

                def pod(claim=claim):
                    outcome["claim"] = plugin.prepare([claim])[claim[1]][0]

                def vm(claim=claim):
                    env.wait(lambda: server.arqs_of(claim[1]),
                             "the claim's ARQs", timeout=30)
                    outcome["vm"] = _vm(node, rp, 1)

                threads = [threading.Thread(target=pod),
                           threading.Thread(target=vm)]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join(60)
                claim_won = outcome["claim"] == ""
                vm_won = outcome["vm"].status_code == 204
                assert claim_won != vm_won, (outcome["claim"],
                                             outcome["vm"].text)
                assert api.get(f"/resource_providers/{rp}/usages")[
                    "usages"] == {"FPGA": 2}
                assert plugin.unprepare([claim]) == {claim[1]: ""}
                for response in (first, outcome["vm"]):
                    api.request("DELETE",
                                f"/allocations/{response.instance}")
                assert api.get(f"/resource_providers/{rp}/usages")[
                    "usages"] == {"FPGA": 0}
    finally:
        if plugin is not None:
            plugin.close()
        server.close()


@pytest.mark.parametrize("node", [{"program_seconds": 4}], indirect=True)
def test_a_plugin_killed_mid_prepare_frees_the_claim_s_units_at_unprepare(
        node, kube_apiserver):
    plugin = node.plugin(**{"dra.prepare_wait": 1}).start()
    env.wait(lambda: _devices(kube_apiserver, plugin.node), "the slice")
    claim = env.allocate(kube_apiserver, plugin, REGION0,
                         node.cyborg.profile("nlb3"))
    assert "still being prepared" in plugin.prepare([claim])[claim[1]][0]
    assert node.api.get(f"/allocations/{claim[1]}")["allocations"]

    plugin.kill()
    plugin.start()
    assert plugin.unprepare([claim]) == {claim[1]: ""}

    assert node.api.get(f"/allocations/{claim[1]}")["allocations"] == {}
    assert node.cyborg.arqs_of(claim[1]) == []
    assert _candidates(node, amount=2) == set(node.cyborg.rps)


def test_a_claim_s_units_the_plugin_has_no_record_of_are_reported(
        node, kube_apiserver):
    plugin = node.plugin().start()
    env.wait(lambda: _devices(kube_apiserver, plugin.node), "the slice")
    # As left by a plugin whose checkpoint was lost.
    uid = str(uuid.uuid4())
    response = node.api.request("PUT", f"/allocations/{uid}", {
        "allocations": {node.cyborg.rps[1]: {"resources": {"FPGA": 2}}},
        "consumer_generation": None,
        "project_id": "k8s-namespace-default", "user_id": "k8s-dra",
        "consumer_type": "DRA_CLAIM"}, headers=MV)
    assert response.status_code == 204, response.text

    env.wait(lambda: f"Placement holds units for claim {uid}"
             in plugin.log_text(), "the warning")
    # A claim's units are the Kubernetes scheduler's to count: the region
    # stays offered.
    assert REGION1 in _devices(kube_apiserver, plugin.node)
    assert plugin.unprepare([("default", uid, "lost")]) == {uid: ""}
    assert node.api.get(f"/allocations/{uid}")["allocations"] == {}
