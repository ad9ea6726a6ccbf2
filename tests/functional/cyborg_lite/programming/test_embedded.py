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

"""Bind-time programming with the embedded agent (in-process transport,
sim driver): the default single-host setup, no broker needed."""

import os
import uuid

import sqlalchemy as sa

from cyborg_lite import arq_states as states
from cyborg_lite.agent.drivers import sim
from cyborg_lite.db import arqs as arq_db
from cyborg_lite.db import deployables as deployable_db
from cyborg_lite.db import models
from tests.functional.cyborg_lite.programming import env


def test_bind_needing_a_function_programs_then_binds(embedded,
                                                     nova_standin):
    arqs = embedded.client.arqs(embedded.client.profile("nlb0"))

    status, body, instance = embedded.bind(arqs)

    assert (status, body) == (202, None)
    assert embedded.client.arq(arqs[0])["state"] == "BindStarted"
    # Nova's poll sees the ARQ unresolved while the region is programmed.
    status, _ = embedded.client.call(
        "GET", f"/v2/accelerator_requests?instance={instance}"
               f"&bind_state=resolved", env.NOVA)
    assert status == 423
    assert embedded.region().state == "programming"
    arq = embedded.client.wait_resolved(arqs[0])
    assert arq["state"] == "Bound"
    assert arq["attach_handle_type"] == "PCI"
    region = embedded.region()
    assert (region.state, region.function_id, region.bitstream_id) == (
        "ready", "nlb0", "img-nlb0")
    assert embedded.sim()["function_id"] == "nlb0"
    events = nova_standin.wait_for_events(1, server_uuid=instance)
    assert [(e["tag"], e["status"]) for e in events] == [
        (arqs[0], "completed")]


def test_repeated_bind_and_same_function_program_nothing(embedded,
                                                         nova_standin):
    client = embedded.client
    profile = client.profile("nlb0")
    arqs = client.arqs(profile)
    status, _, instance = embedded.bind(arqs)
    assert status == 202
    assert client.wait_resolved(arqs[0])["state"] == "Bound"
    programmed_at = embedded.sim()["programmed_at"]

    # The identical bind again: same answer, nothing new.
    again, _, _ = embedded.bind(arqs, instance=instance)
    # Another instance asking for what the region runs binds instantly.
    others = client.arqs(profile)
    other_status, _, other = embedded.bind(others)

    assert again == 202
    assert other_status == 202
    assert client.arq(others[0])["state"] == "Bound"
    assert embedded.sim()["programmed_at"] == programmed_at
    # NOTE: Nova reads an ARQ bound within its PATCH as resolved before it
    # waits for events: only the programmed bind gets one.
    events = nova_standin.settle(quiet=0.3)
    assert [e["server_uuid"] for e in events] == [instance]


def test_region_held_by_another_arq_is_not_reprogrammed(embedded,
                                                        nova_standin):
    client = embedded.client
    first = client.arqs(client.profile("nlb0"))
    embedded.bind(first)
    assert client.wait_resolved(first[0])["state"] == "Bound"

    second = client.arqs(client.profile("nlb3"))
    status, body, instance = embedded.bind(second)

    assert status == 409
    assert "in use" in body["error_message"]
    assert client.arq(second[0])["state"] == "BindFailed"
    assert (embedded.region().state, embedded.region().function_id) == (
        "ready", "nlb0")
    # The 409 is how Nova learns it: no event besides.
    nova_standin.settle()
    assert nova_standin.events_for(instance) == []


def test_concurrent_bind_for_other_function_fails_fast(embedded_factory):
    embedded = embedded_factory(**{"agent.sim_program_seconds": 2})
    client = embedded.client
    first = client.arqs(client.profile("nlb0"))
    embedded.bind(first)
    second = client.arqs(client.profile("nlb3"))

    status, body, _ = embedded.bind(second)

    assert status == 409
    assert "being programmed with accel:function_id=nlb0" in body[
        "error_message"]
    assert client.arq(second[0])["state"] == "BindFailed"
    assert client.wait_resolved(first[0])["state"] == "Bound"


def test_second_arq_for_the_same_function_joins_the_run(embedded):
    client = embedded.client
    arqs = client.arqs(client.profile("nlb0", amount=2))

    status, _, _ = embedded.bind(arqs)

    assert status == 202
    assert {client.wait_resolved(a)["state"] for a in arqs} == {"Bound"}
    assert embedded.region().function_id == "nlb0"


def test_a_bind_that_read_the_region_ready_joins_a_run_started_since(
        embedded):
    """Two boots of one function reach a ready region at once and both
    read it ready: the second's programming start finds the first's run
    begun with what it asks for, and joins it, rather than answer 409
    "being programmed with nlb3; ARQ asks for nlb3" (a storm of real Nova
    boots on MariaDB met it)."""
    (arq_uuid,) = embedded.client.arqs(embedded.client.profile("nlb3"))
    rp = embedded.rps[0]
    with embedded.db.transaction() as session:
        region = deployable_db.by_rp(session, rp)
        assert region.state == "ready"
        # NOTE(tests): the first bind's start, committed after this read
        # (here in the same transaction, unseen by the row already read).
        session.execute(
            sa.update(models.Deployable)
            .where(models.Deployable.id == region.id)
            .values(state="programming", target_function_id="nlb3")
            .execution_options(synchronize_session=False))
        arq = session.execute(sa.select(models.ARQ).where(
            models.ARQ.uuid == arq_uuid)).scalar_one()
        arq_db.move(session, arq, states.BIND_STARTED, hostname=embedded.host,
                    device_rp_uuid=rp, instance_uuid=str(uuid.uuid4()))

        job = embedded.programmer.start(
            session, arq, region,
            {"resources:FPGA": "1", "accel:function_id": "nlb3"})

        assert job is None
        assert session.execute(sa.select(sa.func.count()).where(
            models.AttachHandle.arq_id == arq.id)).scalar_one() == 1


def test_driver_failure_leaves_region_in_error_until_reset(embedded,
                                                           nova_standin):
    client = embedded.client
    os.makedirs(embedded.state_dir, exist_ok=True)
    fault = os.path.join(embedded.state_dir, sim.FAULT_FILE)
    with open(fault, "w") as handle:
        handle.write("bitstream rejected by the card")
    arqs = client.arqs(client.profile("nlb0"))

    status, _, instance = embedded.bind(arqs)

    assert status == 202
    arq = client.wait_resolved(arqs[0])
    assert arq["state"] == "BindFailed"
    region = embedded.region()
    assert region.state == "error"
    assert "bitstream rejected by the card" in region.last_error
    events = nova_standin.wait_for_events(1, server_uuid=instance)
    assert [e["status"] for e in events] == ["failed"]
    # The handle was released and the region is not reused.
    retry = client.arqs(client.profile())
    status, body, _ = embedded.bind(retry)
    assert status == 409 and "error" in body["error_message"]

    # The reconciler reads the region again: still error on the device.
    from cyborg_lite.programming import reconciler
    os.unlink(fault)
    summary = reconciler.reconcile(embedded.programmer, pools=False)
    assert summary["still_error"] == [embedded.region().uuid]
    assert embedded.region().state == "error"

    deployable = client.deployable(embedded.rps[0])
    status, shown = client.program(deployable["uuid"], op="remove")
    assert status == 200, shown
    assert embedded.region().state == "ready"
    assert embedded.region().function_id is None
    fresh = client.arqs(client.profile("nlb3"))
    embedded.bind(fresh)
    assert client.wait_resolved(fresh[0])["state"] == "Bound"


def test_admin_program_records_function_and_refuses_in_use(embedded):
    client = embedded.client
    deployable = client.deployable(embedded.rps[1])

    status, shown = client.program(deployable["uuid"],
                                   value={"image_uuid": "img-gzip"})

    assert status == 200, shown
    assert shown["uuid"] == deployable["uuid"]
    assert shown["bitstream_id"] == "img-gzip"
    assert embedded.region(1).function_id == "gzip"
    assert embedded.sim(1)["function_id"] == "gzip"
    # Programming again what it runs is a no-op; a member may not.
    assert client.program(deployable["uuid"],
                          value={"function_id": "gzip"})[0] == 200
    assert client.program(deployable["uuid"], value={"function_id": "nlb0"},
                          headers=env.NOVA)[0] == 403
    assert client.program(deployable["uuid"], op="replace")[0] == 400
    status, body = client.call(
        "PATCH", f"/v2/deployables/{deployable['uuid']}/program", env.ADMIN,
        [{"path": "/name", "op": "replace", "value": [{"function_id": "x"}]}])
    assert status == 400 and "/name" in body["error_message"]

    arqs = client.arqs(client.profile("gzip"))
    assert embedded.bind(arqs, rp=embedded.rps[1])[0] == 202
    assert client.arq(arqs[0])["state"] == "Bound"
    status, body = client.program(deployable["uuid"],
                                  value={"function_id": "nlb0"})
    assert status == 409
    assert "in use" in body["error_message"]
    assert embedded.region(1).function_id == "gzip"


def test_admin_program_failure_is_a_clear_error(embedded):
    deployable = embedded.client.deployable(embedded.rps[0])

    status, body = embedded.client.program(deployable["uuid"],
                                           value={"function_id": "nope"})

    assert status == 500
    assert "no catalog image has accel:function_id=nope" in body[
        "error_message"]
    assert embedded.region().state == "error"
