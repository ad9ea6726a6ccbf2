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

import concurrent.futures
import datetime
import uuid

import pytest

from accel_common import inventory
from accel_tools import request_groups
from cyborg_lite import binding
from cyborg_lite.db import models
from cyborg_lite.db import routing as routing_db
from cyborg_lite.scheduling import routing
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
        """The lock traits of a provider."""
        return locks_of(self.placement, rp_uuid)

    def groups(self, profile):
        """The groups Nova reads for ``profile`` (GET by name)."""
        status, body = self.api.client.call(
            "GET", f"/v2/device_profiles?name={profile}", env.NOVA)
        assert status == 200, body
        (found,) = body["device_profiles"]
        return found["groups"]

    def candidates(self, profile):
        """The regions Nova's scheduler may allocate for a boot of
        ``profile`` (one lookup, as Nova makes per boot)."""
        return self.offered(self.groups(profile))

    def offered(self, groups):
        """The regions Placement offers for ``groups`` as answered."""
        query = request_groups.querystring(groups,
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


def required_locks(group):
    return {key[len("trait:"):] for key, value in group.items()
            if key.startswith("trait:" + inventory.LOCK_TRAIT_PREFIX)
            and value == "required"}


def test_lookups_of_two_functions_on_idle_regions_get_one_region_each(host):
    """Issue 20 §1, the window between allocation and bind: two boots of
    two functions looked up before either is scheduled can no longer be
    offered the same idle region, whatever Nova's scheduler picks."""
    client = host.api.client
    nlb0, nlb3 = client.profile("nlb0"), client.profile("nlb3")

    (g0,), (g3,) = host.groups(nlb0), host.groups(nlb3)

    assert (required_locks(g0), required_locks(g3)) == ({NLB0}, {NLB3})
    offered0, offered3 = host.offered([g0]), host.offered([g3])
    assert len(offered0) == len(offered3) == 1
    assert offered0 | offered3 == {host.r0, host.r1}
    assert host.traits(*offered0) == {NLB0}
    assert host.traits(*offered3) == {NLB3}
    # Each boot binds where Placement put it: programmed there, no move.
    for profile, (rp,) in ((nlb0, offered0), (nlb3, offered3)):
        status, body, arq, instance = host.boot(profile, rp)
        assert status == 202, body
        resolved = client.wait_resolved(arq)
        assert (resolved["state"], resolved["device_rp_uuid"]) == (
            "Bound", rp)
        assert host.allocated(instance) == {rp: {"FPGA": 1}}
    # What the user stored is unchanged: a read by uuid is not routed.
    status, body = client.call("GET", f"/v2/device_profiles/{nlb3}",
                               env.ADMIN)
    (stored,) = body["device_profile"]["groups"]
    assert (stored["resources:FPGA"], stored["accel:function_id"]) == (
        "1", "nlb3")
    assert required_locks(stored) == set()


def test_a_lookup_shares_a_region_only_while_its_handles_last(host):
    """Lookups of one function go to one region while its free handles
    outnumber the boots routed there; the next one gets the other region,
    and a function with no region left gets none (No valid host), never a
    region it cannot use."""
    client = host.api.client
    nlb0 = client.profile("nlb0")
    status, _, arq, _ = host.boot(nlb0, host.r0)
    assert status == 202
    assert client.wait_resolved(arq)["state"] == "Bound"

    # r0 runs nlb0 with one free handle: the next nlb0 boot goes there.
    assert host.candidates(nlb0) == {host.r0}
    # Its handle is promised to that boot: the next one is given r1 too.
    assert host.candidates(nlb0) == {host.r0, host.r1}
    assert host.traits(host.r1) == {NLB0}
    # No region is left for another function, and none is offered.
    (group,) = host.groups(client.profile("nlb3"))
    assert required_locks(group) == {NLB3}
    assert host.offered([group]) == set()


def test_a_lookup_asking_for_no_function_keeps_to_its_own_regions(host):
    """A boot asking for no function is routed to regions serving such
    boots, so it never takes the handle or the idle region a function's
    boot was routed to."""
    client = host.api.client
    plain, nlb3 = client.profile(), client.profile("nlb3")

    (g_plain,) = host.groups(plain)
    (g3,) = host.groups(nlb3)

    assert required_locks(g_plain) == {EMPTY}
    (empty_region,) = host.offered([g_plain])
    (nlb3_region,) = host.offered([g3])
    assert empty_region != nlb3_region
    # A second plain boot shares the region kept for plain boots.
    assert host.candidates(plain) == {empty_region}
    # Once the region of plain boots is full, the next one takes a handle
    # another content has to spare (and gets what that region loads).
    status, _, arq, _ = host.boot(plain, empty_region)
    assert client.wait_resolved(arq)["state"] == "Bound"
    status, _, arq, _ = host.boot(plain, empty_region)
    assert client.wait_resolved(arq)["state"] == "Bound"
    (g_more,) = host.groups(plain)
    assert required_locks(g_more) == {NLB3}
    assert host.offered([g_more]) == {nlb3_region}


def _pool_profile(client, function):
    """A function pool's profile: it requires the function's trait."""
    name = f"pool-{uuid.uuid4().hex[:10]}"
    status, body = client.call("POST", "/v2/device_profiles", env.ADMIN, [{
        "name": name, "groups": [{
            "resources:FPGA": "1", "accel:function_id": function,
            "trait:" + inventory.function_trait("Intel", function):
                "required"}]}])
    assert status == 201, body
    return name


def test_a_function_pools_boots_count_against_their_regions(host):
    """Issue 20 §1, the real-Nova storm on regions loaded ahead: boots of
    a function pool are not routed (they may go to any region loaded with
    their function) but counted, so a boot asking for no function is not
    routed to the handles they will take; routed where a pool's boots are
    counted, it may go wherever they may, so they cannot fill the regions
    it was given before it is scheduled."""
    client = host.api.client
    for rp, function in ((host.r0, "nlb0"), (host.r1, "nlb3")):
        status, body, arq, instance = host.boot(client.profile(function), rp)
        assert client.wait_resolved(arq)["state"] == "Bound", body
        client.call("DELETE", f"/v2/accelerator_requests?arqs={arq}",
                    env.NOVA)
        host.conn.placement.delete(f"/allocations/{instance}")
    env.expire_routing(host.api.db)
    pool = _pool_profile(client, "nlb0")

    # r0's two handles go to two boots of the pool; the answer is as
    # stored (any region loaded with nlb0), and r0 is kept for nlb0.
    for _ in range(2):
        (group,) = host.groups(pool)
        assert required_locks(group) == set()
        assert host.offered([group]) == {host.r0}
    assert host.traits(host.r0) == {NLB0}

    # r1 has one handle left once a boot of nlb3's pool is counted there:
    # the plain boot shares it with the pool, on the pool's terms.
    (g_pool3,) = host.groups(_pool_profile(client, "nlb3"))
    assert required_locks(g_pool3) == set()
    assert host.traits(host.r1) == {NLB3}
    (g_joining,) = host.groups(client.profile())
    assert required_locks(g_joining) == set()
    assert g_joining[f"trait:{inventory.function_trait('Intel', 'nlb3')}"] \
        == "required"
    assert g_joining[f"trait:{NLB0}"] == "forbidden"
    assert host.offered([g_joining]) == {host.r1}


def test_concurrent_lookups_never_count_a_handle_twice(reported):
    """Routing runs one lookup at a time on every database: 2 regions of 2
    handles, 4 lookups at once (2 x nlb0, 2 x nlb3) end with each
    function on one region of its own."""
    api, placement = reported
    client = api.client
    profiles = [client.profile("nlb0"), client.profile("nlb3")] * 2

    def lookup(profile):
        status, body = client.call(
            "GET", f"/v2/device_profiles?name={profile}", env.NOVA)
        assert status == 200, body
        (group,) = body["device_profiles"][0]["groups"]
        return group["accel:function_id"], required_locks(group)

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lookup, profiles))

    assert sorted(answers) == [("nlb0", {NLB0})] * 2 + [("nlb3", {NLB3})] * 2
    assert sorted(tuple(locks_of(placement, rp)) for rp in api.rps) == [
        (NLB0,), (NLB3,)]


def test_a_users_read_of_a_profile_keeps_nothing(host):
    """Only Nova's lookups (with a service token) are routed: a user
    reading a profile by name, however often, keeps no region."""
    client = host.api.client
    nlb3 = client.profile("nlb3")
    user = {key: value for key, value in env.NOVA.items()
            if key != "X-Service-Roles"}
    for _ in range(3):
        status, body = client.call(
            "GET", f"/v2/device_profiles?name={nlb3}", user)
        assert status == 200, body
        (group,) = body["device_profiles"][0]["groups"]
        assert required_locks(group) == set()
    assert host.traits(host.r0) | host.traits(host.r1) == set()


#: what nova-conductor's keystoneauth sends (the process's name first).
CONDUCTOR = dict(env.NOVA, **{
    "User-Agent": "nova-conductor keystoneauth1/5.18.1 "
                  "python-requests/2.34.2 CPython/3.11.7"})


def test_a_moves_lookup_is_counted_not_routed(host):
    """nova-conductor's lookup (an evacuate or unshelve, for which Nova
    leaves hosts out that the lookup does not name) keeps no region and
    requires no lock trait, so the move may go to any region running the
    function or unlocked; it counts against the function's handles, so a
    boot of that function looked up meanwhile keeps a region of its own."""
    client = host.api.client
    nlb3 = client.profile("nlb3")

    status, body = client.call(
        "GET", f"/v2/device_profiles?name={nlb3}", CONDUCTOR)

    assert status == 200, body
    (group,) = body["device_profiles"][0]["groups"]
    assert required_locks(group) == set()
    assert host.offered([group]) == {host.r0, host.r1}
    assert host.traits(host.r0) | host.traits(host.r1) == set()
    assert host.api.db.run(lambda session: routing_db.live_lookups(
        session, models.utcnow())) == {NLB3: 1}

    (boot,) = host.groups(nlb3)

    assert required_locks(boot) == {NLB3}
    (kept,) = host.offered([boot])
    assert host.traits(kept) == {NLB3}


def test_a_lookup_placement_cannot_serve_is_answered_unrouted(host):
    """Placement unreachable while a lookup keeps a region: the answer is
    the one without routing (no lock trait required that no region
    carries), never a 5xx."""
    client = host.api.client
    nlb3 = client.profile("nlb3")

    with env.placement_unreachable(host.api):
        (group,) = host.groups(nlb3)

    assert required_locks(group) == set()
    assert group["accel:function_id"] == "nlb3"


def test_concurrent_binds_consume_one_routed_lookup_each(reported):
    """Six binds of one content at once consume its six waiting lookups,
    on every database (two binds may pick the same oldest one first)."""
    api, _ = reported
    now = models.utcnow()
    until = now + datetime.timedelta(seconds=60)
    api.db.run(lambda session: [routing_db.add_lookup(
        session, NLB0, 1, now, until) for _ in range(6)])

    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        list(pool.map(lambda _: routing.consume(api.db, [NLB0]), range(6)))

    assert api.db.run(lambda session: routing_db.live_lookups(
        session, models.utcnow())) == {}


def test_a_bind_consumes_its_lookup_with_its_handle(reported):
    """A bound boot is never counted both as a lookup waiting and as a
    handle in use (routing then keeps a region for nobody, and the last
    content of a storm finds none): the bind consumes its lookup in the
    transaction that takes its handle, before the lock traits are written
    after the answer; on every database."""
    api, _ = reported
    client = api.client
    now = models.utcnow()
    until = now + datetime.timedelta(seconds=60)
    api.db.run(lambda session: [routing_db.add_lookup(
        session, EMPTY, 1, now, until) for _ in range(3)])
    arqs = [client.arqs(client.profile())[0] for _ in range(2)]
    after_answer = []

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda arq: binding.bind(
            api.db, {arq: {"hostname": api.host, "device_rp_uuid": api.rps[0],
                           "instance_uuid": str(uuid.uuid4())}},
            programmer=api.services.programmer, locks=api.services.locks,
            defer=after_answer.append), arqs))

    assert after_answer  # the lock traits are still to be written
    assert api.db.run(lambda session: routing_db.live_lookups(
        session, models.utcnow())) == {EMPTY: 1}
    for work in after_answer:
        work()
    assert {client.wait_resolved(arq)["state"] for arq in arqs} == {"Bound"}


def test_a_region_kept_for_boots_all_bound_is_idle_to_routing(host):
    """The bind that consumes a content's last lookup ends its keep only
    after its answer; a lookup routed in between may take the region for
    another content (else it would find no region at all)."""
    client = host.api.client
    nlb0 = client.profile("nlb0")
    (g3,) = host.groups(client.profile("nlb3"))
    (kept_for_nlb3,) = host.offered([g3])
    for _ in range(2):
        host.groups(nlb0)  # the other region's two handles
    host.api.db.run(routing_db.consume, [NLB3])  # bound, keep not ended

    (g0,) = host.groups(nlb0)

    assert required_locks(g0) == {NLB0}
    assert host.offered([g0]) == {host.r0, host.r1}
    assert host.traits(kept_for_nlb3) == {NLB0}


def test_a_kept_region_no_boot_comes_for_is_given_back(host):
    """A lookup whose boot never comes keeps its region only for
    ``[scheduling] lookup_lease``: then the reconciler takes the lock
    trait off and the region is free for any content."""
    client = host.api.client
    (group,) = host.groups(client.profile("nlb3"))
    (kept,) = host.offered([group])
    assert host.traits(kept) == {NLB3}

    env.expire_routing(host.api.db)
    host.api.services.locks.repair()

    assert host.traits(kept) == set()
    (group,) = host.groups(client.profile("nlb0"))
    assert required_locks(group) == {NLB0}
    assert host.traits(host.r0) | host.traits(host.r1) == {NLB0}


def test_a_region_is_kept_only_while_its_boots_are_waiting(host):
    """Once the boots routed to a content are bound, its region is locked
    by their use only: deleted, they leave it free for anything."""
    client = host.api.client
    nlb3 = client.profile("nlb3")
    (group,) = host.groups(nlb3)
    (kept,) = host.offered([group])

    status, body, arq, instance = host.boot(nlb3, kept)
    assert status == 202, body
    assert client.wait_resolved(arq)["state"] == "Bound"
    assert env.region_row(host.api.db, kept).assigned_until is None
    assert host.traits(kept) == {NLB3}
    client.call("DELETE", f"/v2/accelerator_requests?arqs={arq}", env.NOVA)

    assert host.traits(kept) == set()
    assert host.candidates(client.profile("nlb0")) == (
        {host.r0, host.r1} - {kept})


def test_a_boot_scheduled_from_an_older_answer_leaves_a_kept_region(host):
    """A bind that reaches a region kept for another function (its boot was
    scheduled from an answer given before the region was kept) is moved to
    a sibling that can serve it, and the kept region stays kept."""
    client = host.api.client
    (group,) = host.groups(client.profile("nlb3"))
    (kept,) = host.offered([group])
    other = ({host.r0, host.r1} - {kept}).pop()

    status, body, arq, instance = host.boot(client.profile("nlb0"), kept)

    assert status == 202, body
    resolved = client.wait_resolved(arq)
    assert (resolved["state"], resolved["device_rp_uuid"]) == (
        "Bound", other)
    assert host.allocated(instance) == {other: {"FPGA": 1}}
    assert host.traits(kept) == {NLB3}


def test_a_region_being_programmed_is_offered_only_to_what_it_will_serve(
        slow_host):
    """Boots of the function it is being programmed with may be scheduled
    to it and join the run; boots of another function are not. (Reserving
    its capacity instead sent a storm's other boots of the same function
    to "No valid host" while the run lasted.)"""
    host = slow_host
    client = host.api.client
    nlb0 = client.profile("nlb0")
    status, _, first, _ = host.boot(nlb0, host.r0)
    assert status == 202
    assert host.api.region().state == "programming"
    assert host.traits(host.r0) == {NLB0}
    assert host.candidates(nlb0) == {host.r0}
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


def test_a_rescheduled_build_binds_on_its_new_host(host):
    """Nova 34 reschedules a build whose claim failed on its first host
    before nova-compute deleted its ARQs, and binds new ones for the same
    instance on the next host: the old bindings are released, not a 400;
    another binding of the instance on the same host still is."""
    client = host.api.client
    plain = client.profile()
    instance = str(uuid.uuid4())
    (old,) = client.arqs(plain)
    assert client.bind([old], host.r0, instance, "first-host")[0] == 202
    assert client.arq(old)["state"] == "Bound"

    (new,) = client.arqs(plain)
    status, body = client.bind([new], host.r1, instance, host.api.host)

    assert status == 202, body
    assert client.wait_resolved(new)["state"] == "Bound"
    assert client.arq(old)["state"] == "Unbound"
    (extra,) = client.arqs(plain)
    status, body = client.bind([extra], host.r1, instance, host.api.host)
    assert status == 400
    assert "already has bound accelerator requests" in body["error_message"]
