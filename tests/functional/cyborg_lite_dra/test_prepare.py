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

"""NodePrepareResources and NodeUnprepareResources through real
cyborg_lite, as the kubelet calls them (v1 and v1beta1)."""

import concurrent.futures
import json
import os
import time

import pytest

from cyborg_lite_dra import cdi
from tests.functional.cyborg_lite_dra import env

REGION0 = "fpga-0000-0f-00-0-r0"
REGION1 = "fpga-0000-0f-00-0-r1"


@pytest.mark.parametrize("cyborg_lite", [{"gpu": True}], indirect=True)
def test_a_whole_gpu_bound_to_vfio_is_given_its_vfio_group(
        tmp_path, plugin_factory, cyborg_lite, kube_apiserver):
    sysfs = tmp_path / "sys"
    function = sysfs / "bus" / "pci" / "devices" / env.GPU_PCI
    function.mkdir(parents=True)
    (sysfs / "kernel" / "iommu_groups" / "67").mkdir(parents=True)
    os.symlink(sysfs / "kernel" / "iommu_groups" / "67",
               function / "iommu_group")
    plugin = plugin_factory(**{"dra.sysfs_root": sysfs,
                               "dra.simulated_device_node": ""}).start()
    claim = env.allocate(kube_apiserver, plugin, "gpu-0000-af-00-0",
                         cyborg_lite.profile(resource_class="PGPU"))
    uid = claim[1]

    error, devices = plugin.prepare([claim])[uid]

    assert error == ""
    spec = plugin.cdi_spec(uid)
    (device,) = spec["devices"]
    assert device["containerEdits"]["deviceNodes"] == [
        {"path": "/dev/vfio/67"}]
    assert spec["containerEdits"]["deviceNodes"] == [
        {"path": "/dev/vfio/vfio"}]
    env_vars = dict(v.split("=", 1) for v in spec["containerEdits"]["env"])
    assert env_vars["PCIDEVICE_ACCEL_CYBORG_LITE_OPENSTACK_ORG_PGPU"] == (
        env.GPU_PCI)


@pytest.mark.parametrize("version", ["v1", "v1beta1"])
def test_prepare_binds_programs_and_writes_the_cdi_spec(
        plugin, cyborg_lite, kube_apiserver, version):
    profile = cyborg_lite.profile("nlb3")
    claim = env.allocate(kube_apiserver, plugin, REGION0, profile)
    uid = claim[1]

    error, devices = plugin.prepare([claim], version)[uid]

    assert error == ""
    cdi_id = f"{env.DRIVER}/accelerator={uid}-{REGION0}"
    assert devices == [(["accel"], plugin.node, REGION0, [cdi_id])]
    (arq,) = cyborg_lite.arqs_of(uid)
    assert arq["state"] == "Bound"
    assert arq["hostname"] == plugin.node
    assert arq["device_rp_uuid"] == cyborg_lite.rps[0]
    assert arq["device_profile_name"] == profile
    # The region was programmed with the profile's function on bind.
    assert cyborg_lite.region(0)["function_id"] == "nlb3"
    spec = plugin.cdi_spec(uid)
    assert spec["kind"] == f"{env.DRIVER}/accelerator"
    assert spec["cdiVersion"] == cdi.minimum_version(spec) == "0.5.0"
    address = env.handle_address(arq)
    (device,) = spec["devices"]
    assert device["name"] == f"{uid}-{REGION0}"
    assert device["containerEdits"]["deviceNodes"] == [
        {"path": f"/dev/cyborg-lite/{address.replace(':', '-')}",
         "hostPath": "/dev/null"}]
    env_vars = dict(v.split("=", 1) for v in spec["containerEdits"]["env"])
    name = "PCIDEVICE_ACCEL_CYBORG_LITE_OPENSTACK_ORG_FPGA"
    assert env_vars[name] == address
    assert json.loads(env_vars[name + "_INFO"]) == {
        address: {"generic": {"deviceID": address,
                              "devicePath": "/dev/cyborg-lite/"
                                            + address.replace(":", "-")}}}


def test_prepare_again_answers_the_same_and_binds_nothing_new(
        plugin, cyborg_lite, kube_apiserver):
    claim = env.allocate(kube_apiserver, plugin, REGION0,
                         cyborg_lite.profile())
    first = plugin.prepare([claim])
    arqs = cyborg_lite.arqs()

    assert plugin.prepare([claim]) == first
    assert plugin.prepare([claim], "v1beta1") == first
    assert cyborg_lite.arqs() == arqs
    assert first[claim[1]][0] == ""


def test_a_claim_that_cannot_be_served_fails_alone(
        plugin, cyborg_lite, kube_apiserver):
    good = env.allocate(kube_apiserver, plugin, REGION0,
                        cyborg_lite.profile())
    missing = ("default", "0b1c2d3e-0000-4000-8000-000000000001", "gone")
    bad_profile = env.allocate(kube_apiserver, plugin, REGION1,
                               "no-such-profile")
    no_profile = env.allocate(kube_apiserver, plugin, REGION1)
    unknown_device = env.allocate(kube_apiserver, plugin, "fpga-nowhere",
                                  cyborg_lite.profile())
    answers = plugin.prepare([good, missing, bad_profile, no_profile,
                              unknown_device])

    assert answers[good[1]][0] == ""
    assert answers[good[1]][1][0][2] == REGION0
    assert "not found in the API server" in answers[missing[1]][0]
    assert "no-such-profile" in answers[bad_profile[1]][0]
    assert "no device profile for request 'accel'" in answers[no_profile[1]][0]
    assert "fpga-nowhere is not a cyborg_lite deployable" in \
        answers[unknown_device[1]][0]
    # Nothing is left behind for the failed claims; the good one is bound.
    assert {a["instance_uuid"] for a in cyborg_lite.arqs()} == {good[1]}
    assert list(plugin.checkpoint()["claims"]) == [good[1]]


def test_a_claim_whose_uid_changed_is_refused(plugin, cyborg_lite,
                                              kube_apiserver):
    namespace, uid, name = env.allocate(kube_apiserver, plugin, REGION0,
                                        cyborg_lite.profile())
    stale = "7d0c5a4e-1111-4222-8333-444455556666"

    error, devices = plugin.prepare([(namespace, stale, name)])[stale]

    assert f"has uid {uid}, not {stale}" in error
    assert devices == [] and cyborg_lite.arqs() == []


def test_bad_opaque_configuration_is_named_in_the_error(
        plugin, cyborg_lite, kube_apiserver):
    body = kube_apiserver.add_claim("default", "typo", [
        {"request": "accel", "driver": env.DRIVER, "pool": plugin.node,
         "device": REGION0}], [
        {"source": "FromClaim", "opaque": {
            "driver": env.DRIVER, "parameters": {"deviceprofile": "x"}}}])
    uid = body["metadata"]["uid"]

    error, _ = plugin.prepare([("default", uid, "typo")])[uid]

    assert "unknown key(s) deviceprofile" in error


def test_a_bind_cyborg_lite_refuses_fails_that_claim_and_frees_it(
        plugin, cyborg_lite, kube_apiserver):
    # Two handles per region: the third claim on region 0 cannot be bound.
    profile = cyborg_lite.profile()
    claims = [env.allocate(kube_apiserver, plugin, REGION0, profile)
              for _ in range(3)]
    answers = {}
    for claim in claims:
        answers.update(plugin.prepare([claim]))

    assert [answers[c[1]][0] == "" for c in claims] == [True, True, False]
    assert "cyborg_lite" in answers[claims[2][1]][0]
    assert cyborg_lite.arqs_of(claims[2][1]) == []
    # Its ARQ, never bound, was deleted too: only the two bound remain.
    assert sorted(a["instance_uuid"] for a in cyborg_lite.arqs()) == sorted(
        c[1] for c in claims[:2])
    # Once a handle is free again, the kubelet's retry succeeds.
    assert plugin.unprepare([claims[0]]) == {claims[0][1]: ""}
    assert plugin.prepare([claims[2]])[claims[2][1]][0] == ""


def test_unprepare_frees_everything_and_needs_no_claim_object(
        plugin, cyborg_lite, kube_apiserver):
    claim = env.allocate(kube_apiserver, plugin, REGION0,
                         cyborg_lite.profile())
    namespace, uid, name = claim
    assert plugin.prepare([claim])[uid][0] == ""
    kube_apiserver.delete_claim(namespace, name)

    assert plugin.unprepare([claim]) == {uid: ""}
    assert cyborg_lite.arqs() == []
    assert list(plugin.cdi_dir.glob("*.json")) == []
    assert plugin.checkpoint()["claims"] == {}
    # Again, in the other version, and for a claim never prepared.
    never = ("default", "1f0e0d0c-0000-4000-8000-00000000abcd", "never")
    assert plugin.unprepare([claim, never], "v1beta1") == {uid: "",
                                                           never[1]: ""}


def test_a_restarted_plugin_answers_and_unprepares_what_it_prepared(
        plugin_factory, cyborg_lite, kube_apiserver):
    plugin = plugin_factory().start()
    claim = env.allocate(kube_apiserver, plugin, REGION1,
                         cyborg_lite.profile("gzip"))
    first = plugin.prepare([claim])
    arqs = cyborg_lite.arqs()
    assert plugin.stop() == 0

    plugin.start()
    assert plugin.prepare([claim]) == first
    assert cyborg_lite.arqs() == arqs
    assert plugin.unprepare([claim]) == {claim[1]: ""}
    assert cyborg_lite.arqs() == []


def test_programming_longer_than_a_call_is_answered_in_progress(
        slow_node, kube_apiserver):
    slow, plugin = slow_node(4)
    claim = env.allocate(kube_apiserver, plugin, REGION0,
                         slow.profile("nlb0"))
    uid = claim[1]
    error, devices = plugin.prepare([claim])[uid]
    assert "is still being prepared" in error and devices == []
    (arq,) = slow.arqs_of(uid)
    assert arq["state"] == "BindStarted"

    answer = {}
    for _ in range(30):
        answer = plugin.prepare([claim])[uid]
        if not answer[0]:
            break
        time.sleep(0.5)
    assert answer[0] == "" and answer[1][0][2] == REGION0
    # One ARQ, bound once, however many calls it took.
    assert [a["uuid"] for a in slow.arqs_of(uid)] == [arq["uuid"]]
    assert slow.region(0)["function_id"] == "nlb0"


def test_unprepare_during_programming_stops_and_frees(
        slow_node, kube_apiserver):
    slow, plugin = slow_node(3)
    claim = env.allocate(kube_apiserver, plugin, REGION0,
                         slow.profile("nlb0"))
    assert "still being prepared" in plugin.prepare([claim])[claim[1]][0]

    assert plugin.unprepare([claim]) == {claim[1]: ""}
    assert slow.arqs() == []
    assert plugin.checkpoint()["claims"] == {}


def test_lists_split_in_pages_are_read_whole(tmp_path, kube_apiserver):
    # One item per page: the plugin follows cyborg_lite's next links.
    paged = env.CyborgLite(tmp_path / "paged", extra="[api]\nmax_limit = 1\n")
    plugin = env.Plugin(tmp_path / "plugin", paged, kube_apiserver)
    try:
        plugin.start()
        profile = paged.profile(amount=2)
        claim = env.allocate(kube_apiserver, plugin, REGION1, profile)

        error, devices = plugin.prepare([claim])[claim[1]]

        assert error == "" and devices[0][2] == REGION1
        spec = plugin.cdi_spec(claim[1])
        assert len(spec["devices"][0]["containerEdits"]["deviceNodes"]) == 2
        (slice_,) = env.wait(lambda: list(kube_apiserver.slices.values()),
                             "the slice")
        assert [d["name"] for d in slice_["spec"]["devices"]] == [REGION0,
                                                                 REGION1]
    finally:
        plugin.close()
        paged.close()


def test_concurrent_calls_for_one_claim_bind_once(plugin, cyborg_lite,
                                                  kube_apiserver):
    claim = env.allocate(kube_apiserver, plugin, REGION0,
                         cyborg_lite.profile("nlb0"))
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda version: plugin.prepare(
            [claim], version), ["v1", "v1beta1", "v1", "v1beta1"]))

    assert all(a == answers[0] for a in answers)
    assert answers[0][claim[1]][0] == ""
    assert len(cyborg_lite.arqs_of(claim[1])) == 1


def test_a_plugin_killed_while_binding_resumes_from_the_checkpoint(
        slow_node, kube_apiserver):
    slow, plugin = slow_node(3)
    claim = env.allocate(kube_apiserver, plugin, REGION0,
                         slow.profile("nlb3"))
    uid = claim[1]
    assert "still being prepared" in plugin.prepare([claim])[uid][0]
    (arq,) = slow.arqs_of(uid)
    assert plugin.checkpoint()["claims"][uid]["state"] == "binding"

    plugin.kill()
    plugin.start()
    answer = env.wait(lambda: (lambda a: not a[0] and a)(
        plugin.prepare([claim])[uid]), "the prepared claim")

    assert answer[1][0][2] == REGION0
    assert [a["uuid"] for a in slow.arqs_of(uid)] == [arq["uuid"]]
    assert plugin.checkpoint()["claims"][uid]["state"] == "prepared"


def test_the_claim_status_says_which_handle_the_container_got(
        plugin, cyborg_lite, kube_apiserver):
    claim = env.allocate(kube_apiserver, plugin, REGION0,
                         cyborg_lite.profile("nlb3"))
    uid = claim[1]

    assert plugin.prepare([claim])[uid][0] == ""

    (arq,) = cyborg_lite.arqs_of(uid)
    address = env.handle_address(arq)
    (status,) = env.device_status(kube_apiserver, claim)
    assert (status["driver"], status["pool"], status["device"]) == (
        env.DRIVER, plugin.node, REGION0)
    (ready,) = status["conditions"]
    assert (ready["type"], ready["status"]) == ("Ready", "True")
    assert status["data"] == {"handles": [{
        "pciBusID": address, "type": "PCI", "acceleratorRequest": arq["uuid"],
        "resourceProviderUUID": cyborg_lite.rps[0]}]}
    assert [problems for _, _, problems
            in kube_apiserver.claim_status_writes] == [[]]


def test_a_nic_vf_with_a_netdev_gets_network_data(
        tmp_path, plugin_factory, cyborg_lite, kube_apiserver):
    sysfs = tmp_path / "sys"
    for index in range(4):
        address = cyborg_lite.device["regions"][index // 2][
            "attach_handles"][index % 2]["pci_address"]
        net = sysfs / "bus" / "pci" / "devices" / address / "net" / \
            f"ens1f0v{index}"
        net.mkdir(parents=True)
        (net / "address").write_text(f"52:54:00:00:00:0{index}\n")
    plugin = plugin_factory(**{"dra.sysfs_root": sysfs}).start()
    claim = env.allocate(kube_apiserver, plugin, REGION0,
                         cyborg_lite.profile())

    assert plugin.prepare([claim])[claim[1]][0] == ""

    (status,) = env.device_status(kube_apiserver, claim)
    (arq,) = cyborg_lite.arqs_of(claim[1])
    index = [h["pci_address"] for r in cyborg_lite.device["regions"]
             for h in r["attach_handles"]].index(
        status["data"]["handles"][0]["pciBusID"])
    assert status["networkData"] == {
        "interfaceName": f"ens1f0v{index}",
        "hardwareAddress": f"52:54:00:00:00:0{index}"}
    assert all(problems == [] for _, _, problems
               in kube_apiserver.claim_status_writes)


def test_a_refused_status_write_does_not_fail_the_claim(
        plugin, cyborg_lite, kube_apiserver):
    kube_apiserver.validate_claim_status = lambda claim, status: ["no"]
    claim = env.allocate(kube_apiserver, plugin, REGION0,
                         cyborg_lite.profile())

    assert plugin.prepare([claim])[claim[1]][0] == ""
    env.wait(lambda: "Writing the device status of ResourceClaim"
             in plugin.log(), "the logged refusal")
    namespace, _, name = claim
    assert "devices" not in kube_apiserver.claims[(namespace, name)]["status"]
