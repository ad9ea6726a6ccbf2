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

"""Route Nova's device profile lookups to the regions that will serve them.

Nova 34 reads a boot's device profile (``GET /v2/device_profiles?name=``)
in nova-api, before it schedules the boot, and its scheduler then reads
nothing but Placement. Placement refuses a claim only for capacity, so two
boots scheduled at the same moment for two functions can both claim one
idle region, and only one of them can be served there. The lookup is the
one moment cyborg_lite hears of a boot before Placement does, so it decides
there which content the boot will use:

* a group asking for function F goes to F: regions running F, being
  programmed with F, or kept for F, while their free handles exceed the
  boots routed there and not bound yet; else one more idle region is kept
  for F from now on;
* a group asking for no function goes to regions that serve boots like it
  (nothing loaded first) with handles to spare, else to an idle region,
  kept for what it has loaded;
* a group of a function pool (it requires F's function trait itself) is
  only counted: it is answered as before, so it may go to any region
  loaded with F, but it counts against F's handles like a routed one, and
  one more idle region loaded with F is kept when they run short. A group
  asking for no function routed to F while a pool's boots are counted
  there is answered like them (F's function trait required, the other
  contents' lock traits forbidden): with F's lock trait it could only go
  to the regions kept when it was routed, and the pool's boots, free to go
  to any, could fill those first.

A move's lookup (nova-conductor reads the profile again to schedule an
evacuate, or the unshelve of an offloaded server) is counted, not routed:
Nova leaves hosts out of a move (the failed host, or every host but the one
an unshelve names) that the lookup does not name, so an answer confined to
one content's regions may offer only regions on those hosts. It is
answered as a group routing leaves alone, and a group asking for a
function counts against its handles like a routed one (no region is kept
for it), so boots routed meanwhile keep to their own regions
(:func:`is_move`).

A routed group is answered with that content's lock trait required, so
Placement offers the boot nothing else, and the regions kept carry the lock
trait before the answer leaves (:mod:`.locks`). Routing runs one lookup at
a time (a row lock), so two lookups never count the same free handle. A
routed lookup counts against its content until a bind of that content
consumes it (:func:`consumed_in`), or for ``[scheduling] lookup_lease``
seconds; regions stay kept while lookups of their content are waiting.
doc/source/architecture.rst, "Scheduling a region that can serve the
group", has the whole model.
"""

import collections
import dataclasses
import datetime
import threading
import time

from oslo_log import log as logging

from accel_common import inventory
from cyborg_lite.db import models
from cyborg_lite.db import routing as routing_db
from cyborg_lite.programming import regions
from cyborg_lite.scheduling import locks

LOG = logging.getLogger(__name__)

#: Seconds the regions found with a group's own traits are reused for
#: other lookups of the same traits. Those are identity traits, which the
#: Ironic reporter changes only when hardware does; a region that gains
#: them is routed to this much later at most.
ELIGIBLE_TTL = 60

#: Programs whose lookups are a move's: nova-conductor reads a profile only
#: to schedule an evacuate or an unshelve (nova/conductor/manager.py),
#: nova-api only for a boot. keystoneauth names the program in the
#: User-Agent it sends (the process's name, first).
MOVE_AGENTS = frozenset({"nova-conductor"})


@dataclasses.dataclass(frozen=True)
class Spec:
    """What a routable group asks for: one resource class and its units,
    and the content (``(function_id, None)``; None: no function).
    ``pool_trait``: the function trait a function pool's group requires
    (counted, answered as is)."""

    resource_class: str
    units: int
    content: tuple = None
    pool_trait: str = None


def spec_of(group):
    """The :class:`Spec` of a group lookup routing can route or count, or
    None: groups of more than one resource class, asking for an image by
    id, or requiring a lock trait are answered as before, and so are
    groups requiring a function trait (function pools), which are only
    counted when they name their function."""
    resources = {key[len("resources:"):]: value
                 for key, value in group.items()
                 if key.startswith("resources:")}
    if len(resources) != 1 or group.get(locks.BITSTREAM_KEY):
        return None
    required = [key[len("trait:"):] for key, value in group.items()
                if key.startswith("trait:") and value == "required"]
    if any(name.startswith(inventory.LOCK_TRAIT_PREFIX)
           for name in required):
        return None
    pool = next((name for name in sorted(required)
                 if name.startswith(inventory.FUNCTION_TRAIT_PREFIX)), None)
    (resource_class, units), = resources.items()
    try:
        units = int(units)
    except (TypeError, ValueError):
        return None
    function_id = group.get(locks.FUNCTION_KEY)
    if pool and not function_id:
        return None
    return Spec(resource_class, units,
                (function_id, None) if function_id else None,
                pool_trait=pool)


def is_move(user_agent):
    """True for a lookup that schedules a move of a server that exists
    (its User-Agent's first product is one of :data:`MOVE_AGENTS`)."""
    product = (user_agent or "").split(" ", 1)[0]
    return product.split("/", 1)[0] in MOVE_AGENTS


def own_traits(group):
    """The group's own required and forbidden traits, as Placement's
    ``required`` parameter takes them (``!`` forbids)."""
    traits = []
    for key, value in sorted(group.items()):
        if not key.startswith("trait:"):
            continue
        name = key[len("trait:"):]
        if name.startswith(inventory.LOCK_TRAIT_PREFIX):
            continue
        if value == "required":
            traits.append(name)
        elif value == "forbidden":
            traits.append("!" + name)
    return traits


@dataclasses.dataclass
class _Region:
    deployable: object
    device: object
    total: int
    in_use: int
    #: the lock trait it carries (None: idle, free for any content).
    lock: str = None
    #: what it serves under that lock.
    content: tuple = None

    @property
    def free(self):
        return max(0, self.total - self.in_use)


def _survey(session, spec, eligible, now, lookups):
    """The regions of the spec's resource class (those in ``eligible``
    when given), each with its lock and content. A region kept for a
    content no lookup waits for any more is idle (the bind that consumed
    the last one ends the keep after its answer)."""
    rows = routing_db.regions(session, spec.resource_class)
    if eligible is not None:
        rows = [row for row in rows if row[0].rp_uuid in eligible]
    held = routing_db.handles(session, [d.id for d, _ in rows])
    found = [_Region(d, v, *held.get(d.id, (0, 0))) for d, v in rows]
    device_in_use = collections.Counter()
    for region in found:
        device_in_use[region.device.id] += region.in_use
    for region in found:
        d = region.deployable
        unit_in_use = (device_in_use[region.device.id]
                       if region.device.program_mode == "single"
                       else region.in_use)
        region.lock = locks.region_lock(d, unit_in_use, now)
        if region.lock is None:
            continue
        if d.state == regions.PROGRAMMING:
            region.content = (d.target_function_id, d.target_bitstream_id)
        elif unit_in_use:
            region.content = (d.function_id, d.bitstream_id)
        else:
            region.content = locks.kept_for(d, now)
            if lookups.get(region.lock, 0) <= 0:
                region.lock = region.content = None
    return found


def _spare(found, lookups):
    """``{lock trait: free handles beyond the lookups routed there and
    not bound yet}``."""
    spare = collections.Counter()
    for region in found:
        if region.lock is not None:
            spare[region.lock] += region.free
    for trait, units in lookups.items():
        spare[trait] -= units
    return spare


def _idle_unit(found, content):
    """The idle regions to keep for ``content`` (None: for no function,
    which keeps a region for what it has loaded): one region, or every
    region of a ``single``-mode device; [] when none is idle.

    Hosts without a region of the content it would serve come first:
    Nova's scheduler claims only the first candidate of a host, so two
    regions of one content on one host let two boots scheduled at once
    claim the same one, and the second then fails there. Then regions
    already loaded with what is asked, then empty ones, then hosts with the
    fewest idle regions (the hosts with many stay free for what comes
    next).
    """
    by_device = collections.defaultdict(list)
    hosts_of = collections.defaultdict(set)
    for region in found:
        by_device[region.device.id].append(region)
        if region.lock is not None:
            hosts_of[region.lock].add(region.device.hostname)

    def idle(region):
        return (region.lock is None and region.total > 0
                and region.deployable.state == regions.READY)

    idle_on = collections.Counter(r.device.hostname for r in found
                                  if idle(r))

    def rank(region):
        loaded = (region.deployable.function_id,
                  region.deployable.bitstream_id)
        serves = inventory.lock_trait(*(content or loaded))
        loads = 0 if content and loaded[0] == content[0] else (
            1 if loaded == (None, None) else 2)
        return (region.device.hostname in hosts_of[serves], loads,
                idle_on[region.device.hostname], region.deployable.id)

    for region in sorted((r for r in found if idle(r)), key=rank):
        if region.device.program_mode != "single":
            return [region]
        unit = by_device[region.device.id]
        if all(idle(r) for r in unit):
            return unit
    return []


def route(session, group, eligible, now, lease, move=False):
    """Route one group (inside the router's transaction).

    :param eligible: rp uuids of the regions with the group's own traits
        (None: every region of its resource class).
    :param move: the lookup is a move's: count it, never route it
        (:func:`count_move`).
    :returns: ``(the group as answered, or None when not routed or only
        counted, the lock trait it was routed or counted to (None: neither),
        {rp uuid: (deployable id, lock trait recorded as written)} of the
        regions of that lock trait)``.
    """
    spec = spec_of(group)
    if spec is None:
        return None, None, {}
    if move:
        return None, count_move(session, spec, now, lease), {}
    # NOTE(cyborg_lite): the lookups waiting are read before the handles
    # in use: a bind takes its handle and consumes its lookup in one
    # transaction, and where each statement reads its own snapshot
    # (PostgreSQL) a bind committed between the two reads is counted
    # twice, never not at all.
    lookups = routing_db.live_lookups(session, now)
    found = _survey(session, spec, eligible, now, lookups)
    if not found:
        return None, None, {}
    spare = _spare(found, lookups)
    kept = []
    if spec.content is not None:
        trait = inventory.lock_trait(*spec.content)
        content = spec.content
        if spare[trait] < spec.units:
            kept = _idle_unit(found, content)
    else:
        roomy = [t for t, n in spare.items() if n >= spec.units]
        empty = inventory.lock_trait()
        if roomy:
            trait = (empty if empty in roomy
                     else max(roomy, key=lambda t: (spare[t], t)))
            content = next(r.content for r in found if r.lock == trait)
        else:
            kept = _idle_unit(found, None)
            if not kept:
                return None, None, {}
            d = kept[0].deployable
            content = (d.function_id, d.bitstream_id)
            trait = inventory.lock_trait(*content)
    for region in kept:
        region.lock, region.content = trait, content
    until = now + datetime.timedelta(seconds=lease)
    routing_db.keep_for(
        session, [r.deployable.id for r in found if r.lock == trait],
        content[0], content[1], until)
    routing_db.add_lookup(session, trait, spec.units, now, until,
                          function_trait=spec.pool_trait)
    if kept:
        LOG.info("Regions %s kept for %s (lookup routing)",
                 ", ".join(r.deployable.uuid for r in kept),
                 regions.target_text(*content) if any(content)
                 else "boots asking for no function")
    if spec.pool_trait is not None:
        answer = None
    elif spec.content is None:
        answer = _joining_pools(session, group, trait, found)
    else:
        answer = {**group, f"trait:{trait}": "required"}
    return answer, trait, {
        r.deployable.rp_uuid: (r.deployable.id, r.deployable.lock_written)
        for r in found if r.lock == trait}


def count_move(session, spec, now, lease):
    """Count a move's group against its function's handles, keeping no
    region: its answer is the one without routing, so it may go to any
    region that runs the function or is unlocked on a host Nova allows,
    and the region it binds consumes the lookup as a routed boot's would.

    :returns: the lock trait it is counted against (None: a group asking
        for no function, neither counted nor routed).
    """
    if spec.content is None:
        return None
    trait = inventory.lock_trait(*spec.content)
    routing_db.add_lookup(session, trait, spec.units, now,
                          now + datetime.timedelta(seconds=lease),
                          function_trait=spec.pool_trait)
    LOG.info("Lookup of a move counted for %s, not routed",
             regions.target_text(*spec.content))
    return trait


def _joining_pools(session, group, trait, found):
    """A group asking for no function routed to ``trait``: with that lock
    trait required, or, while function pools' boots are counted there,
    with their function trait required (the one most of them require) and
    every other content's lock trait forbidden, so it may go wherever they
    may."""
    pools = routing_db.pool_traits(session, trait)
    if not pools:
        return {**group, f"trait:{trait}": "required"}
    function_trait = max(pools, key=lambda t: (pools[t], t))
    others = {r.lock for r in found if r.lock not in (None, trait)}
    return {**{f"trait:{other}": "forbidden" for other in sorted(others)},
            **group, f"trait:{function_trait}": "required"}


def _route_all(session, groups, eligible, lease, move):
    routing_db.lock_router(session)
    now = models.utcnow()
    answered, relied = [], {}
    for group, rps in zip(groups, eligible):
        routed, trait, regions_of = route(session, group, rps, now, lease,
                                          move=move)
        answered.append(routed)
        relied.update({rp: (ident, trait, written)
                       for rp, (ident, written) in regions_of.items()})
    return answered, relied


def consume(db, lock_traits):
    """Failed to bind: one routed lookup of each of these contents is not
    waiting any more (a bind consumes its own in its transaction:
    :func:`consumed_in`); a content with no lookup left waiting keeps no
    region.

    :returns: ids of the regions no longer kept (their lock traits are to
        be written).
    """
    def _run(session):
        routing_db.consume(session, lock_traits)
        return routing_db.release(session, lock_traits, inventory.lock_trait)
    return db.run(_run)


def consumed_in(session, lock_traits):
    """Bound, in the bind's own transaction: one routed lookup of each of
    these contents is not waiting any more (a bind that was not routed
    takes the oldest one's place). In the same transaction as the handle
    it took, so routing never counts a boot both as a lookup waiting and a
    handle in use, which would keep a region for nobody."""
    routing_db.consume(session, lock_traits)


def release(db, lock_traits):
    """End the keeps of these contents if no lookup of theirs is waiting.

    :returns: ids of the regions no longer kept.
    """
    return db.run(routing_db.release, list(lock_traits),
                  inventory.lock_trait)


class Router:
    """Answers Nova's lookups of device profiles.

    :param conf: the service's configuration.
    :param db: the :class:`~cyborg_lite.db.engine.Database`.
    :param lock_traits: a :class:`~.locks.LockTraits`.
    """

    def __init__(self, conf, db, lock_traits):
        self.conf = conf
        self.db = db
        self.locks = lock_traits
        self._eligible_lock = threading.Lock()
        #: traits -> (monotonic time found, rp uuids with them).
        self._eligible_found = {}

    @property
    def enabled(self):
        return (self.conf.scheduling.route_lookups
                and self.locks is not None and self.locks.enabled)

    def _eligible(self, client, group):
        """The regions with the group's own traits; None: any will do.
        Read from Placement at most every :data:`ELIGIBLE_TTL` seconds per
        set of traits."""
        traits = ",".join(own_traits(group))
        if not traits:
            return None
        now = time.monotonic()
        with self._eligible_lock:
            found_at, rps = self._eligible_found.get(traits, (None, None))
        if found_at is not None and now - found_at < ELIGIBLE_TTL:
            return rps
        body = client.request("GET", "/resource_providers",
                              params={"required": traits})
        rps = frozenset(rp["uuid"] for rp in body["resource_providers"])
        with self._eligible_lock:
            self._eligible_found[traits] = (now, rps)
        return rps

    def answer(self, groups, contents, move=False):
        """Record Nova's lookup of a profile and answer it: its groups as
        Nova's scheduler must read them. Routed groups require their
        content's lock trait, and the regions kept for them carry it when
        this returns; the others forbid the lock traits of other contents
        (:func:`.locks.scheduling_groups`). Writes the lookups and keeps
        to the database and the lock traits to Placement: it is the
        recording step of Nova's lookup, never of a plain read.

        :param contents: what regions run, from
            :meth:`.locks.LockTraits.contents`.
        :param move: the lookup is a move's (:func:`is_move`): counted,
            not routed.
        """
        fallback = locks.scheduling_groups(groups, contents)
        if not self.enabled or not any(spec_of(g) for g in groups):
            return fallback
        client = self.locks.providers.client()
        try:
            eligible = [self._eligible(client, g)
                        if spec_of(g) and not move else None
                        for g in groups]
        except Exception as error:
            LOG.warning("Lookup not routed: Placement did not list the "
                        "regions of its groups: %s", error)
            return fallback
        routed, relied = self.db.run(_route_all, groups, eligible,
                                     self.conf.scheduling.lookup_lease, move)
        # NOTE(cyborg_lite): Placement refuses an unknown required trait,
        # and writing one to a provider.
        try:
            client.ensure_traits({trait for _, trait, _ in relied.values()})
        except Exception as error:
            LOG.warning("Lookup not routed: its lock traits could not be "
                        "created in Placement: %s", error)
            return fallback
        # NOTE(cyborg_lite): every region the answer relies on must carry
        # its lock trait before the answer leaves, also one another
        # lookup kept a moment ago and is still writing.
        failed = self.locks.ensure_written(relied)
        if failed:
            # NOTE(cyborg_lite): no region would carry what the answer
            # requires: answer as without routing.
            LOG.warning("Lookup not routed: lock traits of the regions "
                        "kept for it not written (the reconciler "
                        "retries): %s", ", ".join(failed))
            return fallback
        return [mine if mine is not None else theirs
                for mine, theirs in zip(routed, fallback)]
