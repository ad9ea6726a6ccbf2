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

"""A claim whose allocated region cannot serve it at prepare time, end to
end: cyborg_lite and the plugin share one real Placement (as on a node
shared with Nova), a VM takes the region between the Kubernetes
scheduler's allocation and the kubelet's prepare, cyborg_lite moves the
claim's bind (and its Placement allocation) to the sibling region, and the
claim says in ``status.devices``, and its CDI spec gives the container,
the handle it really got."""

import uuid

import pytest

from accel_tools.embedded import placement as embedded_placement
from tests.functional.cyborg_lite_dra import env

REGION0 = "fpga-0000-0f-00-0-r0"
REGION1 = "fpga-0000-0f-00-0-r1"
MV = {"openstack-api-version": "placement 1.39"}
#: Nova's calls: a project's user with a service token.
NOVA = {**env.ADMIN, "X-Service-Roles": "service"}


@pytest.fixture
def shared(node, placement_server):
    """The ``node`` of the ledger tests with cyborg_lite pointed at the
    same Placement: its binds write lock traits and move allocations."""
    embedded_placement.apply_client_conf(node.cyborg.conf, "placement",
                                        placement_server.url)
    return node


def _netdevs(sysfs, cyborg_lite):
    """A netdev (``ens1f0v<i>``, MAC ``52:54:00:00:00:0<i>``) on each
    attach handle, as a NIC's VFs have; {pci address: index}."""
    addresses = [h["pci_address"] for r in cyborg_lite.device["regions"]
                 for h in r["attach_handles"]]
    for index, address in enumerate(addresses):
        net = sysfs / "bus" / "pci" / "devices" / address / "net" / \
            f"ens1f0v{index}"
        net.mkdir(parents=True)
        (net / "address").write_text(f"52:54:00:00:00:0{index}\n")
    return {address: index for index, address in enumerate(addresses)}


def _boot(node, profile, rp_uuid):
    """A VM's accelerator as Nova gets it: an allocation of one FPGA on
    ``rp_uuid`` (the scheduler's), an ARQ of ``profile`` bound there (the
    conductor's PATCH); returns ``(instance, bound ARQ)``."""
    instance = str(uuid.uuid4())
    response = node.api.request("PUT", f"/allocations/{instance}", {
        "allocations": {rp_uuid: {"resources": {"FPGA": 1}}},
        "consumer_generation": None, "project_id": "vm-project",
        "user_id": "vm-user", "consumer_type": "INSTANCE"}, headers=MV)
    assert response.status_code == 204, response.text
    cyborg = node.cyborg
    status, body = cyborg.call("POST", "/v2/accelerator_requests", env.ADMIN,
                               {"device_profile_name": profile})
    assert status == 201, body
    arq = body["arqs"][0]["uuid"]
    status, body = cyborg.call("PATCH", "/v2/accelerator_requests",
                               NOVA, {arq: [
                                   {"op": "add", "path": "/hostname",
                                    "value": cyborg.host},
                                   {"op": "add", "path": "/device_rp_uuid",
                                    "value": rp_uuid},
                                   {"op": "add", "path": "/instance_uuid",
                                    "value": instance}]})
    assert status == 202, body
    bound = env.wait(lambda: (lambda a: a["state"] != "BindStarted" and a)(
        cyborg.arqs_of(instance)[0]), "the VM's bind")
    assert (bound["state"], bound["device_rp_uuid"]) == ("Bound", rp_uuid)
    return instance, bound


def _allocations(node, consumer):
    body = node.api.get(f"/allocations/{consumer}")
    return body, {rp: a["resources"]
                  for rp, a in body["allocations"].items()}


def _usage(node, rp_uuid):
    return node.api.get(f"/resource_providers/{rp_uuid}/usages")["usages"]


def _candidates(node, amount):
    body = node.api.get(f"/allocation_candidates?resources=FPGA:{amount}"
                        f"&in_tree={node.root}")
    return {rp for request in body["allocation_requests"]
            for rp in request["allocations"]}


def test_a_claim_moved_to_a_sibling_region_names_the_handle_it_got(
        tmp_path, shared, kube_apiserver):
    node, cyborg = shared, shared.cyborg
    r0, r1 = cyborg.rps
    r1_handles = [h["pci_address"]
                  for h in cyborg.device["regions"][1]["attach_handles"]]
    netdevs = _netdevs(tmp_path / "sys", cyborg)
    plugin = node.plugin(**{"dra.sysfs_root": tmp_path / "sys"}).start()
    env.wait(lambda: kube_apiserver.slices, "the slice")
    # The scheduler allocated region 0 to the claim; before the kubelet
    # prepares it, a VM is bound there with another function, which
    # locks the region (one of its two handles is still free).
    claim = env.allocate(kube_apiserver, plugin, REGION0,
                         cyborg.profile("nlb3"))
    namespace, uid, name = claim
    vm, vm_arq = _boot(node, cyborg.profile("nlb0"), r0)
    assert cyborg.region(0)["function_id"] == "nlb0"

    error, devices = plugin.prepare([claim])[uid]

    assert error == ""
    # The claim keeps the device it was allocated ...
    cdi_id = f"{env.DRIVER}/accelerator={uid}-{REGION0}"
    assert devices == [(["accel"], plugin.node, REGION0, [cdi_id])]
    # ... and cyborg_lite bound it to the sibling, programmed for it.
    (arq,) = cyborg.arqs_of(uid)
    assert (arq["state"], arq["device_rp_uuid"]) == ("Bound", r1)
    address = env.handle_address(arq)
    assert address in r1_handles
    assert cyborg.region(1)["function_id"] == "nlb3"
    assert cyborg.region(0)["function_id"] == "nlb0"
    assert "not to the allocated device " + REGION0 in plugin.log_text()

    # The claim's Placement allocation followed the bind: Nova's
    # scheduler sees region 0 with the VM's unit, region 1 with the
    # claim's.
    body, held = _allocations(node, uid)
    assert held == {r1: {"FPGA": 1}}
    assert (body["consumer_type"], body["project_id"]) == (
        "DRA_CLAIM", f"k8s-namespace-{namespace}")
    assert _usage(node, r0) == {"FPGA": 1}
    assert _usage(node, r1) == {"FPGA": 1}
    assert _allocations(node, vm)[1] == {r0: {"FPGA": 1}}
    assert _candidates(node, 2) == set()

    # status.devices names the sibling's handle, valid upstream.
    (status,) = env.device_status(kube_apiserver, claim)
    assert (status["driver"], status["pool"], status["device"]) == (
        env.DRIVER, plugin.node, REGION0)
    assert status["data"] == {"handles": [{
        "pciBusID": address, "type": "PCI", "acceleratorRequest": arq["uuid"],
        "resourceProviderUUID": r1, "allocatedResourceProviderUUID": r0}]}
    index = netdevs[address]
    assert status["networkData"] == {
        "interfaceName": f"ens1f0v{index}",
        "hardwareAddress": f"52:54:00:00:00:0{index}"}
    (ready,) = status["conditions"]
    assert (ready["type"], ready["status"]) == ("Ready", "True")
    assert address in ready["message"]
    assert [problems for _, _, problems
            in kube_apiserver.claim_status_writes] == [[]]

    # The container is given the same handle.
    spec = plugin.cdi_spec(uid)
    (device,) = spec["devices"]
    assert device["name"] == f"{uid}-{REGION0}"
    (device_node,) = device["containerEdits"]["deviceNodes"]
    assert device_node["path"] == (
        f"/dev/cyborg-lite/{address.replace(':', '-')}")
    assert f"PCIDEVICE_ACCEL_CYBORG_LITE_OPENSTACK_ORG_FPGA={address}" in (
        spec["containerEdits"]["env"])

    # Unprepare frees the sibling's handle and unit, and nothing else.
    assert plugin.unprepare([claim]) == {uid: ""}
    assert cyborg.arqs_of(uid) == []
    assert _allocations(node, uid)[1] == {}
    assert _usage(node, r1) == {"FPGA": 0}
    assert _usage(node, r0) == {"FPGA": 1}
    assert _candidates(node, 2) == {r1}
    assert list(plugin.cdi_dir.glob("*.json")) == []
    assert plugin.checkpoint()["claims"] == {}
    assert [a["uuid"] for a in cyborg.arqs()] == [vm_arq["uuid"]]
    assert cyborg.arqs_of(vm)[0]["state"] == "Bound"
    # Both of region 1's handles are free again: a claim for two binds.
    again = env.allocate(kube_apiserver, plugin, REGION1,
                         cyborg.profile("nlb3", amount=2))
    assert plugin.prepare([again])[again[1]][0] == ""
    assert {a["device_rp_uuid"] for a in cyborg.arqs_of(again[1])} == {r1}


def test_a_moved_claim_s_unit_is_not_offered_again_on_the_sibling(
        shared, kube_apiserver):
    node, cyborg = shared, shared.cyborg
    r0, r1 = cyborg.rps
    plugin = node.plugin(**{"dra.partitionable_devices": "true"}).start()
    env.wait(lambda: kube_apiserver.slices, "the slice")
    claim = env.allocate(kube_apiserver, plugin, f"{REGION0}-h0",
                         cyborg.profile("nlb3"))
    _boot(node, cyborg.profile("nlb0"), r0)

    assert plugin.prepare([claim])[claim[1]][0] == ""
    (arq,) = cyborg.arqs_of(claim[1])
    assert arq["device_rp_uuid"] == r1

    # The Kubernetes scheduler counts the claim's unit on region 0, where
    # it allocated it; on region 1 the slice counts it as taken.
    def counters(wanted):
        found = {c["name"]: c["counters"]["handles"]["value"]
                 for s in kube_apiserver.slices.values()
                 for c in s["spec"].get("sharedCounters", [])}
        return found.get(REGION1) == wanted and found

    env.wait(lambda: counters("1"), "region 1's counter with one handle")
    devices = {d["name"] for s in kube_apiserver.slices.values()
               for d in s["spec"]["devices"]}
    assert REGION1 not in devices
    assert {f"{REGION1}-h0", f"{REGION1}-h1"} <= devices

    def share_of_r1(device):
        return device["name"].startswith(f"{REGION1}-h")

    kube_apiserver.schedule("default", "s0", env.DRIVER, plugin.node,
                            select=share_of_r1)
    with pytest.raises(LookupError):
        kube_apiserver.schedule("default", "s1", env.DRIVER, plugin.node,
                                select=share_of_r1)
    assert all(p == [] for _, _, p in kube_apiserver.writes)

    assert plugin.unprepare([claim]) == {claim[1]: ""}
    env.wait(lambda: counters("2"), "region 1's counter with both handles")


def test_a_claim_goes_to_the_sibling_that_already_runs_its_function(
        shared, kube_apiserver):
    # A VM runs nlb3 on region 1 with a handle free; the claim asking for
    # nlb3 was allocated the idle region 0: cyborg_lite binds it on
    # region 1 at once and moves its allocation there, region 0 stays
    # idle for another function.
    node, cyborg = shared, shared.cyborg
    r0, r1 = cyborg.rps
    plugin = node.plugin().start()
    env.wait(lambda: kube_apiserver.slices, "the slice")
    nlb3 = cyborg.profile("nlb3")
    vm, _ = _boot(node, nlb3, r1)
    claim = env.allocate(kube_apiserver, plugin, REGION0, nlb3)
    namespace, uid, name = claim

    assert plugin.prepare([claim])[uid][0] == ""

    (arq,) = cyborg.arqs_of(uid)
    assert (arq["state"], arq["device_rp_uuid"]) == ("Bound", r1)
    assert cyborg.region(0)["function_id"] is None
    assert _allocations(node, uid)[1] == {r1: {"FPGA": 1}}
    assert _usage(node, r0) == {"FPGA": 0}
    (status,) = env.device_status(kube_apiserver, claim)
    assert status["device"] == REGION0
    (handle,) = status["data"]["handles"]
    assert (handle["pciBusID"], handle["resourceProviderUUID"],
            handle["allocatedResourceProviderUUID"]) == (
        env.handle_address(arq), r1, r0)
    assert [problems for _, _, problems
            in kube_apiserver.claim_status_writes] == [[]]

    # The VM and the moved claim hold region 1's two handles: it is not
    # offered until the claim ends.

    def offered():
        return {d["name"] for s in kube_apiserver.slices.values()
                for d in s["spec"]["devices"]}

    env.wait(lambda: REGION1 not in offered(), "region 1 withdrawn")

    assert plugin.unprepare([claim]) == {uid: ""}
    assert _allocations(node, uid)[1] == {}
    assert _usage(node, r1) == {"FPGA": 1}
    assert [a["instance_uuid"] for a in cyborg.arqs()] == [vm]
    env.wait(lambda: REGION1 in offered(), "region 1 offered again")
