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

"""The reconciler, function pools, Placement and an unreachable broker,
with the embedded (in-process) agent."""

import io
import os
import time

import pytest

from accel_tools.embedded import common as embedded_common
from cyborg_lite.agent.drivers import sim
from cyborg_lite.cmd.manage import programming as pools_manage
from cyborg_lite.programming import pools
from cyborg_lite.programming import programmer as programmer_mod
from cyborg_lite.programming import reconciler
from tests.fixtures import polling
from tests.fixtures.cyborg_server import make_inventory
from tests.functional.cyborg_lite.programming import env


def _restarted(api):
    """A fresh Programmer, as a restarted API process has, reaching the
    same agent."""
    return programmer_mod.Programmer(
        api.conf, api.db, notifier=api.services.notifier,
        agent_api=api.programmer.agent_api())


def _orphaned_bind(api, function_id):
    """A bind whose API process dies right after the commit: the region
    stays ``programming`` and its lease goes stale."""
    api.programmer.launch = lambda jobs: []
    arqs = api.client.arqs(api.client.profile(function_id))
    status, _, instance = api.bind(arqs)
    assert status == 202
    assert api.region().state == "programming"
    return arqs[0], instance


def test_reconciler_binds_what_the_agent_finished(embedded_factory,
                                                  nova_standin):
    # NOTE(tests): stale_after leaves room for a loaded CI machine between
    # the bind and the first settle_stale, which must find nothing stale.
    api = embedded_factory(**{"programming.stale_after": 2.0})
    arq, instance = _orphaned_bind(api, "nlb0")
    # The agent got the request and finished it; nobody heard the answer.
    agent = api.programmer.agent_api()
    agent.program_region(api.conf.agent.host, api.pci, "0",
                         function_id="nlb0")
    assert reconciler.settle_stale(_restarted(api))["settled"] == []
    time.sleep(2.1)

    summary = reconciler.reconcile(_restarted(api), pools=False)

    assert summary["settled"] == [api.region().uuid]
    assert api.client.arq(arq)["state"] == "Bound"
    assert (api.region().state, api.region().function_id) == ("ready",
                                                              "nlb0")
    events = nova_standin.wait_for_events(1, server_uuid=instance)
    assert [e["status"] for e in events] == ["completed"]
    # A second pass (another worker) finds nothing left to do.
    again = reconciler.reconcile(_restarted(api), pools=False)
    assert not again["settled"] and not again["errored"]


def _counting_programs(api):
    """Count the agent's program_region calls; returns the list they are
    appended to."""
    agent = api.programmer.agent_api()
    calls, program = [], agent.program_region

    def counted(*args, **kwargs):
        calls.append(args)
        return program(*args, **kwargs)

    agent.program_region = counted
    return calls


def test_reconciler_starts_what_the_agent_never_did(embedded_factory,
                                                    nova_standin):
    api = embedded_factory(**{"programming.stale_after": 0.3})
    calls = _counting_programs(api)
    arq, instance = _orphaned_bind(api, "nlb3")
    time.sleep(0.4)

    summary = reconciler.reconcile(_restarted(api), pools=False, wait=True)

    # The agent reads the region healthy without the target: it was never
    # asked, so the run is started (once), not failed.
    assert summary["relaunched"] == [api.region().uuid]
    assert summary["errored"] == []
    assert api.client.arq(arq)["state"] == "Bound"
    region = api.region()
    assert (region.state, region.function_id, region.relaunches) == (
        "ready", "nlb3", 1)
    assert len(calls) == 1
    events = nova_standin.wait_for_events(1, server_uuid=instance)
    assert [e["status"] for e in events] == ["completed"]
    # Another worker's pass finds nothing left to do.
    again = reconciler.reconcile(_restarted(api), pools=False, wait=True)
    assert not again["relaunched"] and not again["errored"]
    assert len(calls) == 1
    # The next run of the region starts with its count at 0.
    assert api.client.unbind([arq])[0] == 202
    fresh = api.client.arqs(api.client.profile("nlb0"))
    api.programmer.launch = lambda jobs: []
    assert api.bind(fresh)[0] == 202
    assert (api.region().state, api.region().relaunches) == (
        "programming", 0)


def test_a_single_device_is_started_again_as_one_run(embedded_factory,
                                                      caplog):
    document = env.single_mode(make_inventory(handles_per_region=(2, 2)))
    api = embedded_factory(document=document,
                           **{"programming.stale_after": 0.3})
    calls = _counting_programs(api)
    arq, _ = _orphaned_bind(api, "nlb3")
    assert api.region(1).state == "programming"
    time.sleep(0.4)

    summary = reconciler.reconcile(_restarted(api), pools=False, wait=True)

    assert sorted(summary["relaunched"]) == sorted(
        [api.region(0).uuid, api.region(1).uuid])
    assert api.client.arq(arq)["state"] == "Bound"
    assert [(api.region(i).state, api.region(i).function_id)
            for i in (0, 1)] == [("ready", "nlb3")] * 2
    # One run, as the bind's own: each region of the device once.
    assert sorted(call[2] for call in calls) == ["0", "1"]
    (line,) = [r.getMessage() for r in caplog.records
               if "never reached the agent" in r.getMessage()]
    assert api.region(0).uuid in line and api.region(1).uuid in line


def test_a_run_whose_process_keeps_dying_fails_after_the_limit(
        embedded_factory, nova_standin):
    api = embedded_factory(**{"programming.stale_after": 0.3,
                              "programming.relaunch_limit": 1})
    calls = _counting_programs(api)
    arq, instance = _orphaned_bind(api, "nlb3")
    time.sleep(0.4)
    dying = _restarted(api)
    dying.launch = lambda jobs: []  # started again, and died again
    assert reconciler.reconcile(dying, pools=False)["relaunched"] == [
        api.region().uuid]
    time.sleep(0.4)

    summary = reconciler.settle_stale(_restarted(api), wait=True)

    assert summary["relaunched"] == []
    assert summary["errored"] == [api.region().uuid]
    assert api.client.arq(arq)["state"] == "BindFailed"
    assert "after 1 restart(s)" in api.region().last_error
    assert calls == []
    events = nova_standin.wait_for_events(1, server_uuid=instance)
    assert [e["status"] for e in events] == ["failed"]


def test_a_run_started_again_that_the_agent_fails_is_bind_failed(
        embedded_factory, nova_standin):
    api = embedded_factory(**{"programming.stale_after": 0.3})
    calls = _counting_programs(api)
    arq, instance = _orphaned_bind(api, "nlb3")
    os.makedirs(api.state_dir, exist_ok=True)
    with open(os.path.join(api.state_dir, sim.FAULT_FILE), "w") as handle:
        handle.write("injected")
    time.sleep(0.4)

    summary = reconciler.reconcile(_restarted(api), pools=False, wait=True)

    assert summary["relaunched"] == [api.region().uuid]
    assert len(calls) == 1
    assert api.client.arq(arq)["state"] == "BindFailed"
    region = api.region()
    assert region.state == "error"
    assert "injected" in region.last_error
    events = nova_standin.wait_for_events(1, server_uuid=instance)
    assert [e["status"] for e in events] == ["failed"]


def test_a_run_the_agent_lost_is_not_started_again(embedded_factory,
                                                   nova_standin):
    api = embedded_factory(**{"programming.stale_after": 0.3})
    arq, instance = _orphaned_bind(api, "nlb3")
    # The agent took the run and lost it: the device reads error.
    fault = os.path.join(api.state_dir, sim.FAULT_FILE)
    with open(fault, "w") as handle:
        handle.write("the agent lost it")
    with pytest.raises(Exception, match="the agent lost it"):
        api.programmer.agent_api().program_region(
            api.conf.agent.host, api.pci, "0", function_id="nlb3")
    os.remove(fault)
    assert api.sim()["state"] == "error"
    time.sleep(0.4)

    summary = reconciler.reconcile(_restarted(api), pools=False, wait=True)

    assert summary["relaunched"] == []
    assert summary["errored"] == [api.region().uuid]
    assert api.client.arq(arq)["state"] == "BindFailed"
    events = nova_standin.wait_for_events(1, server_uuid=instance)
    assert [e["status"] for e in events] == ["failed"]


def test_unreachable_broker_fails_the_bind_quickly(embedded_factory,
                                                   nova_standin):
    url = f"rabbit://guest:guest@127.0.0.1:{embedded_common.free_port()}/"
    api = embedded_factory(transport_url=url, **{"agent.rpc_retry": 1})
    arqs = api.client.arqs(api.client.profile("nlb0"))
    started = time.monotonic()

    status, body, instance = api.bind(arqs)

    # Refused in the PATCH's answer, before the region was touched: Nova 34
    # handles a failed bind reliably only as that answer.
    assert status == 409
    assert "message broker unreachable" in body["error_message"]
    assert time.monotonic() - started < 20
    assert api.client.arq(arqs[0])["state"] == "BindFailed"
    region = api.region()
    assert region.state == "ready"
    assert "not programmed" in region.last_error
    assert nova_standin.events_for(instance) == []
    api.programmer.agent_api().transport.cleanup()


def test_single_device_in_use_refuses_then_pool_reprograms_it(
        embedded_factory, nova_standin):
    document = env.single_mode(make_inventory(handles_per_region=(2,)))
    api = embedded_factory(document=document,
                           **{"pools.policies": ["nlb3:1:FPGA"]})
    client = api.client
    first = client.arqs(client.profile("nlb0"))
    api.bind(first)
    assert client.wait_resolved(first[0])["state"] == "Bound"

    other = client.arqs(client.profile("nlb3"))
    status, body, instance = api.bind(other)

    assert status == 409
    assert "device (program_mode single)" in body["error_message"]
    nova_standin.settle()
    assert nova_standin.events_for(instance) == []
    # The pool wants nlb3 but never takes a card with a slot in use.
    summary = reconciler.reconcile(api.programmer, wait=True)
    assert summary["pools"] == {}
    (row,) = pools.status(api.db, api.conf)
    assert (row["desired"], row["ready"], row["missing"]) == (1, 0, 1)

    assert client.unbind(first)[0] == 202
    summary = reconciler.reconcile(api.programmer, wait=True)

    assert summary["pools"] == {"config:nlb3:FPGA": [api.region().uuid]}
    assert api.region().function_id == "nlb3"
    (row,) = pools.status(api.db, api.conf)
    assert (row["ready"], row["missing"]) == (1, 0)
    # Now a bind asking for nlb3 needs no programming at all.
    fresh = client.arqs(client.profile("nlb3"))
    assert api.bind(fresh)[0] == 202
    assert client.arq(fresh[0])["state"] == "Bound"
    out = io.StringIO()
    pools_manage.pools_status(api.conf, _Args(json=False), out=out)
    assert "config:nlb3:FPGA" in out.getvalue()


class _Args:
    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)


def test_pool_fill_does_not_overshoot_and_keeps_other_pools(
        embedded_factory):
    document = make_inventory(handles_per_region=(1, 1, 1))
    api = embedded_factory(document=document, **{
        "pools.policies": ["nlb0:2", "gzip:1"],
        "agent.sim_program_seconds": 0})

    first = reconciler.reconcile(api.programmer, wait=True)["pools"]
    second = reconciler.reconcile(api.programmer, wait=True)["pools"]

    assert sum(len(v) for v in first.values()) == 3
    assert second == {}
    functions = sorted(api.region(i).function_id for i in range(3))
    assert functions == ["gzip", "nlb0", "nlb0"]
    assert {r["name"]: (r["ready"], r["missing"])
            for r in pools.status(api.db, api.conf)} == {
        "config:gzip": (1, 0), "config:nlb0": (2, 0)}


def test_placement_locked_while_programming_and_trait_after(
        embedded_factory, placement_server):
    """While a region is programmed its provider keeps its capacity and
    carries the lock trait of the function (boots of that function, and
    boots asking for none, may be scheduled there and join the run); the
    function trait comes with the confirmed function; a failed run leaves
    the region reserved."""
    api = embedded_factory(**{"agent.sim_program_seconds": 1.5})
    conn = placement_server.connection()
    client = env.report_to_placement(api, placement_server, conn)
    rp = api.rps[0]
    arqs = api.client.arqs(api.client.profile("nlb0"))

    api.bind(arqs)

    polling.wait_for(
        lambda: "CUSTOM_ACCEL_LOCKED_FN_NLB0" in client.traits(rp)[1],
        what="the region locked to nlb0 while it is programmed")
    assert api.region().state == "programming"
    assert client.inventories(rp)[1]["FPGA"]["reserved"] == 0
    assert not [t for t in client.traits(rp)[1]
                if t.startswith("CUSTOM_FPGA_FUNCTION_ID_")]
    assert api.client.wait_resolved(arqs[0])["state"] == "Bound"
    assert client.inventories(rp)[1]["FPGA"]["reserved"] == 0
    traits = client.traits(rp)[1]
    assert "CUSTOM_FPGA_FUNCTION_ID_INTEL_NLB0" in traits
    assert "CUSTOM_FPGA_INTEL" in traits  # the reporter's stay

    # A failed run leaves the region reserved and without function trait.
    os.makedirs(api.state_dir, exist_ok=True)
    with open(os.path.join(api.state_dir, sim.FAULT_FILE), "w") as handle:
        handle.write("injected")
    api.conf.set_override("sim_program_seconds", 0, group="agent")
    deployable = api.client.deployable(api.rps[1])
    status, _ = api.client.program(deployable["uuid"],
                                   value={"function_id": "nlb3"})
    assert status == 500
    assert client.inventories(api.rps[1])[1]["FPGA"]["reserved"] == 2
    assert not [t for t in client.traits(api.rps[1])[1]
                if t.startswith("CUSTOM_FPGA_FUNCTION_ID_")]
    conn.close()
