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

"""What Nova's scheduler sees of a region, and binds that cannot be served
where Nova allocated, against the real Placement (lock traits, the groups
answered to Nova, allocation candidates, moves to a sibling region)."""

import uuid

import pytest

from accel_common import inventory
from accel_tools import request_groups
from tests.functional.cyborg_lite.programming import env

MV = request_groups.MICROVERSION
NLB0 = inventory.lock_trait("nlb0")
NLB3 = inventory.lock_trait("nlb3")
EMPTY = inventory.lock_trait()


def locks_of(placement, rp_uuid):
    """The lock traits of a provider in Placement."""
    return {t for t in placement.traits(rp_uuid)[1]
            if t.startswith(inventory.LOCK_TRAIT_PREFIX)}


class Host:
    """The embedded API's host in the real Placement: a compute node with
    a marker trait (other tests' providers stay out of the candidates),
    two regions of 2 handles each, and Nova's side of a boot."""

    def __init__(self, api, placement, conn):
        self.api = api
        self.placement = placement
        self.conn = conn
        self.r0, self.r1 = api.rps
        root = placement.provider(self.r0)["root_provider_uuid"]
        self.marker = f"CUSTOM_T_{uuid.uuid4().hex.upper()}"
        placement.ensure_traits([self.marker])
        generation, traits = placement.traits(root)
        placement.set_traits(root, generation, traits | {self.marker})

    def traits(self, rp_uuid):
        return locks_of(self.placement, rp_uuid)

    def groups(self, profile):
        """The groups Nova reads for ``profile`` (GET by name)."""
        status, body = self.api.client.call(
            "GET", f"/v2/device_profiles?name={profile}", env.NOVA)
        assert status == 200, body
        (found,) = body["device_profiles"]
        return found["groups"]

    def candidates(self, profile):
        """The regions Nova's scheduler may allocate for ``profile``."""
        query = request_groups.querystring(self.groups(profile),
                                           root_required=[self.marker])
        response = self.conn.placement.get(
            f"/allocation_candidates?{query}", microversion=MV)
        assert response.status_code == 200, response.text
        return {rp for request in response.json()["allocation_requests"]
                for rps in request["mappings"].values() for rp in rps}

    def allocate(self, instance, rp_uuid):
        """Nova's scheduler claiming one FPGA of ``rp_uuid``, at the
        microversion Nova 34 claims with (no consumer type)."""
        response = self.conn.placement.put(
            f"/allocations/{instance}", microversion="1.36", json={
                "allocations": {rp_uuid: {"resources": {"FPGA": 1}}},
                "consumer_generation": None, "project_id": "p1",
                "user_id": "nova"})
        assert response.status_code == 204, response.text

    def allocated(self, instance):
        response = self.conn.placement.get(f"/allocations/{instance}",
                                           microversion=MV)
        return {rp: alloc["resources"] for rp, alloc in
                response.json()["allocations"].items()}

    def boot(self, profile, rp_uuid, instance=None):
        """Allocate, create the ARQ, bind it to ``rp_uuid``: what Nova
        does. :returns: ``(status, body, arq, instance)``."""
        instance = instance or str(uuid.uuid4())
        self.allocate(instance, rp_uuid)
        (arq,) = self.api.client.arqs(profile)
        status, body = self.api.client.bind([arq], rp_uuid, instance,
                                            self.api.host)
        return status, body, arq, instance


def _host(embedded_factory, placement_server, program_seconds):
    api = embedded_factory(**{"agent.sim_program_seconds": program_seconds})
    conn = placement_server.connection()
    yield Host(api, env.report_to_placement(api, placement_server, conn),
               conn)
    conn.close()


@pytest.fixture
def host(embedded_factory, placement_server):
    """sqlite; :func:`reported` covers the three databases."""
    yield from _host(embedded_factory, placement_server, 0.5)


@pytest.fixture
def slow_host(embedded_factory, placement_server):
    """A host whose programming runs last long enough to look at them."""
    yield from _host(embedded_factory, placement_server, 3.0)


def test_a_bound_region_carries_its_lock_until_its_last_handle_is_free(
        reported):
    api, placement = reported
    client = api.client
    r0 = api.rps[0]
    first, second = (client.arqs(client.profile("nlb0")) for _ in range(2))
    api.bind(first, rp=r0)
    assert client.wait_resolved(first[0])["state"] == "Bound"
    api.bind(second, rp=r0)
    assert client.wait_resolved(second[0])["state"] == "Bound"

    assert locks_of(placement, r0) == {NLB0}
    assert locks_of(placement, api.rps[1]) == set()
    client.call("DELETE", f"/v2/accelerator_requests?arqs={first[0]}",
                env.NOVA)
    assert locks_of(placement, r0) == {NLB0}  # one consumer is left
    client.call("DELETE", f"/v2/accelerator_requests?arqs={second[0]}",
                env.NOVA)
    assert locks_of(placement, r0) == set()
    # The function trait stays: the region still runs nlb0, free for any.
    assert inventory.function_trait("Intel", "nlb0") in placement.traits(
        r0)[1]


def test_a_function_group_is_answered_with_the_locks_it_must_avoid(host):
    client = host.api.client
    status, _, arq, _ = host.boot(client.profile("nlb0"), host.r0)
    assert status == 202
    assert client.wait_resolved(arq)["state"] == "Bound"

    nlb3 = client.profile("nlb3")
    (group,) = host.groups(nlb3)
    assert group[f"trait:{NLB0}"] == "forbidden"
    assert group[f"trait:{EMPTY}"] == "forbidden"
    assert f"trait:{NLB3}" not in group
    assert group["accel:function_id"] == "nlb3"
    # What the user stored is unchanged.
    status, body = client.call("GET", f"/v2/device_profiles/{nlb3}",
                               env.ADMIN)
    assert body["device_profile"]["groups"] == host.groups(nlb3)
    # Nova's scheduler may put nlb3 only on the idle region; nlb0 and a
    # group that asks for no function anywhere with a free handle.
    assert host.candidates(nlb3) == {host.r1}
    assert host.candidates(client.profile("nlb0")) == {host.r0, host.r1}
    assert host.candidates(client.profile()) == {host.r0, host.r1}


def test_a_region_being_programmed_is_offered_only_to_what_it_will_serve(
        slow_host):
    """Boots of the function it is being programmed with, and boots asking
    for no function, may be scheduled to it and join the run; boots of
    another function are kept away by its lock trait. (Reserving its
    capacity instead sent a storm's other boots of the same function to
    "No valid host" while the run lasted.)"""
    host = slow_host
    client = host.api.client
    nlb0 = client.profile("nlb0")
    status, _, first, _ = host.boot(nlb0, host.r0)
    assert status == 202
    assert host.api.region().state == "programming"
    assert host.traits(host.r0) == {NLB0}
    assert host.candidates(nlb0) == {host.r0, host.r1}
    assert host.candidates(client.profile()) == {host.r0, host.r1}
    assert host.candidates(client.profile("nlb3")) == {host.r1}

    status, body, second, instance = host.boot(nlb0, host.r0)

    assert status == 202, body
    assert client.arq(second)["state"] == "BindStarted"
    for arq in (first, second):
        resolved = client.wait_resolved(arq)
        assert (resolved["state"], resolved["device_rp_uuid"]) == (
            "Bound", host.r0)
    assert host.allocated(instance) == {host.r0: {"FPGA": 1}}


def test_a_bind_locked_out_of_its_region_moves_to_a_sibling(host):
    client = host.api.client
    _, _, first, _ = host.boot(client.profile("nlb0"), host.r0)
    assert client.wait_resolved(first)["state"] == "Bound"

    # Scheduled before the lock was seen: Nova allocated the nlb0 region.
    status, body, arq, instance = host.boot(client.profile("nlb3"), host.r0)

    assert status == 202, body
    resolved = client.wait_resolved(arq)
    assert resolved["state"] == "Bound"
    assert resolved["device_rp_uuid"] == host.r1
    assert host.allocated(instance) == {host.r1: {"FPGA": 1}}
    assert env.sim_region(host.api.state_dir, host.api.pci, "1")[
        "function_id"] == "nlb3"
    assert host.traits(host.r0) == {NLB0}
    assert host.traits(host.r1) == {NLB3}


def test_a_bind_that_would_program_goes_to_a_sibling_running_it(host):
    """Nova put a second nlb0 boot on the idle region while the other
    region runs nlb0 with a free handle: it is bound there at once, its
    allocation moved, and the idle region stays idle for another
    function."""
    client = host.api.client
    nlb0 = client.profile("nlb0")
    _, _, first, _ = host.boot(nlb0, host.r0)
    assert client.wait_resolved(first)["state"] == "Bound"
    idle = env.sim_region(host.api.state_dir, host.api.pci, "1")

    status, body, arq, instance = host.boot(nlb0, host.r1)

    assert status == 202, body
    bound = client.arq(arq)
    assert (bound["state"], bound["device_rp_uuid"]) == ("Bound", host.r0)
    assert host.allocated(instance) == {host.r0: {"FPGA": 1}}
    assert env.sim_region(host.api.state_dir, host.api.pci, "1") == idle
    assert host.traits(host.r1) == set()
    assert host.candidates(client.profile("nlb3")) == {host.r1}


def test_a_sibling_move_placement_refuses_leaves_the_chosen_region(host):
    """Placement unreachable when the bind would move to the sibling that
    runs the function: the bind programs the region Nova chose instead."""
    client = host.api.client
    nlb0 = client.profile("nlb0")
    _, _, first, _ = host.boot(nlb0, host.r0)
    assert client.wait_resolved(first)["state"] == "Bound"
    instance = str(uuid.uuid4())
    host.allocate(instance, host.r1)
    (arq,) = client.arqs(nlb0)

    with env.placement_unreachable(host.api):
        status, body = client.bind([arq], host.r1, instance, host.api.host)

    assert status == 202, body
    resolved = client.wait_resolved(arq)
    assert (resolved["state"], resolved["device_rp_uuid"]) == (
        "Bound", host.r1)
    assert host.allocated(instance) == {host.r1: {"FPGA": 1}}
    assert env.sim_region(host.api.state_dir, host.api.pci, "1")[
        "function_id"] == "nlb0"


def test_two_functions_scheduled_onto_one_idle_region_both_bind(host):
    client = host.api.client
    nlb0, nlb3 = client.profile("nlb0"), client.profile("nlb3")
    a0, a3 = client.arqs(nlb0)[0], client.arqs(nlb3)[0]
    i0, i3 = str(uuid.uuid4()), str(uuid.uuid4())
    # Both claims fit the idle region's two handles.
    host.allocate(i0, host.r0)
    host.allocate(i3, host.r0)

    assert client.bind([a0], host.r0, i0, host.api.host)[0] == 202
    assert client.bind([a3], host.r0, i3, host.api.host)[0] == 202

    bound = {client.wait_resolved(a)["device_rp_uuid"]: client.arq(a)
             for a in (a0, a3)}
    assert {a["state"] for a in bound.values()} == {"Bound"}
    assert set(bound) == {host.r0, host.r1}
    assert host.allocated(i3) == {host.r1: {"FPGA": 1}}


def test_a_group_without_function_joins_a_region_being_programmed(host):
    client = host.api.client
    plain, plain_instance = client.arqs(client.profile())[0], str(
        uuid.uuid4())
    # Both scheduled onto the idle region before either was bound.
    host.allocate(plain_instance, host.r0)
    _, _, programming, _ = host.boot(client.profile("nlb0"), host.r0)

    status, body = client.bind([plain], host.r0, plain_instance,
                               host.api.host)

    assert status == 202, body
    assert client.arq(plain)["state"] == "BindStarted"
    resolved = client.wait_resolved(plain)
    assert resolved["state"] == "Bound"
    assert resolved["device_rp_uuid"] == host.r0
    assert client.wait_resolved(programming)["state"] == "Bound"


def test_no_sibling_that_can_serve_answers_409(host):
    client = host.api.client
    nlb0 = client.profile("nlb0")
    # r0 full with nlb0, then r1 programmed with nlb0 for a third boot.
    for rp in (host.r0, host.r0, host.r1):
        _, _, arq, _ = host.boot(nlb0, rp)
        assert client.wait_resolved(arq)["state"] == "Bound"
        assert client.arq(arq)["device_rp_uuid"] == rp

    status, body, arq, instance = host.boot(client.profile("nlb3"), host.r1)

    assert status == 409
    assert "cannot be reprogrammed with accel:function_id=nlb3" in body[
        "error_message"]
    assert f"No other region of host {host.api.host} can serve ARQ {arq}" \
        in body["error_message"]
    assert client.arq(arq)["state"] == "BindFailed"
    assert host.allocated(instance) == {host.r1: {"FPGA": 1}}


def test_a_function_without_image_is_refused_before_anything_is_loaded(
        host, nova_standin):
    client = host.api.client
    status, body, arq, instance = host.boot(client.profile("nofn9"),
                                            host.r0)

    assert status == 409
    assert "no catalog image has accel:function_id=nofn9" in body[
        "error_message"]
    assert client.arq(arq)["state"] == "BindFailed"
    row = env.region_row(host.api.db, host.r0)
    assert (row.state, row.function_id) == ("ready", None)
    assert host.traits(host.r0) == set()
    assert nova_standin.events_for(instance) == []
    # The region serves the next boot at once.
    status, _, arq, _ = host.boot(client.profile("nlb0"), host.r0)
    assert status == 202
    assert client.wait_resolved(arq)["state"] == "Bound"
