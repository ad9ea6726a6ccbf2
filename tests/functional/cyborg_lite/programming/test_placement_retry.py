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

"""A Placement outage right after the agent confirmed a function: the bind
succeeds, and the reconciler brings the provider right once Placement is
back, with a real Placement and the embedded agent."""

from cyborg_lite.programming import reconciler
from cyborg_lite.programming import regions
from tests.fixtures import polling
from tests.functional.cyborg_lite.programming import env

NLB0 = "CUSTOM_FPGA_FUNCTION_ID_INTEL_NLB0"


def _function_traits(client, rp_uuid):
    return {t for t in client.traits(rp_uuid)[1]
            if t.startswith("CUSTOM_FPGA_FUNCTION_ID_")}


def _bind_while_placement_fails(api, client):
    """Bind a function that needs programming; Placement goes away once
    the region is locked to it, before the agent confirms the function."""
    rp = api.rps[0]
    arqs = api.client.arqs(api.client.profile("nlb0"))
    assert api.bind(arqs)[0] == 202
    polling.wait_for(
        lambda: "CUSTOM_ACCEL_LOCKED_FN_NLB0" in client.traits(rp)[1],
        what="the region locked to nlb0 while it is programmed")
    with env.placement_unreachable(api):
        assert api.client.wait_resolved(arqs[0])["state"] == "Bound"
    return arqs[0]


def test_reconciler_retries_placement_update_after_programming(reported):
    api, client = reported
    rp = api.rps[0]

    _bind_while_placement_fails(api, client)

    # The function is confirmed and bound; Placement still shows the run.
    region = api.region()
    assert (region.state, region.function_id) == ("ready", "nlb0")
    assert region.last_error.startswith(regions.PLACEMENT_FAILED)
    assert _function_traits(client, rp) == set()

    # A pass while Placement is still down keeps the failure recorded.
    with env.placement_unreachable(api):
        summary = reconciler.reconcile(api.programmer, pools=False)
    assert summary["placement_failing"] == [region.uuid]
    assert api.region().state == "ready"
    assert api.region().last_error.startswith(
        regions.PLACEMENT_FAILED)

    summary = reconciler.reconcile(api.programmer, pools=False)

    assert summary["placement_fixed"] == [region.uuid]
    assert client.inventories(rp)[1]["FPGA"]["reserved"] == 0
    traits = client.traits(rp)[1]
    assert NLB0 in traits
    assert "CUSTOM_FPGA_INTEL" in traits  # the reporter's stay
    region = api.region()
    assert (region.state, region.function_id, region.last_error) == (
        "ready", "nlb0", None)
    # Placement is right now: the next pass has nothing to retry.
    providers = api.programmer.providers.client()
    writes = providers.writes
    again = reconciler.reconcile(api.programmer, pools=False)
    assert again["placement_fixed"] == again["placement_failing"] == []
    assert providers.writes == writes


def test_retry_leaves_a_region_a_new_run_took(reported):
    api, client = reported
    rp = api.rps[0]
    arq = _bind_while_placement_fails(api, client)
    # A reconciler pass loads the region, then an operator reprograms it
    # (the simulated card takes 3 s) before the pass writes anything.
    (deployable_id, function_id, seen, job), = api.db.read(
        reconciler._placement_failures)
    assert api.client.unbind([arq])[0] == 202
    api.conf.set_override("sim_program_seconds", 3, group="agent")
    new_run = api.programmer.prepare(api.region().uuid, function_id="nlb3")
    (running,) = api.programmer.launch([new_run])
    assert api.region().state == "programming"

    error = reconciler._update_placement(api.programmer, deployable_id,
                                         function_id, job)
    recorded = api.db.run(regions.note_placement, deployable_id,
                          function_id, error, seen=seen)

    assert (error, recorded) == (None, False)
    assert _function_traits(client, rp) == set()
    # A whole pass leaves it alone too, and the run ends as it should.
    summary = reconciler.reconcile(api.programmer, pools=False)
    assert summary["placement_fixed"] == summary["placement_failing"] == []
    assert running.result(30).ok
    assert _function_traits(client, rp) == {
        "CUSTOM_FPGA_FUNCTION_ID_INTEL_NLB3"}
    assert client.inventories(rp)[1]["FPGA"]["reserved"] == 0
    assert api.region().last_error is None
