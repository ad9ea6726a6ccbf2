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

"""Binding to a sibling region when Nova's choice cannot serve the group.

Lock traits keep the scheduler away from regions locked to another
function, but Placement cannot stop two boots that are scheduled at the
same moment, before either is bound, from both choosing one idle region
for two different functions: it refuses a claim only for capacity, and two
boots of the same function must be able to share a region (see the
architecture page). The bind closes that window on the host Nova chose:
when the region Nova allocated cannot serve the group any more, the
consumer's allocation is moved, in one consumer-generation-checked ``PUT
/allocations/{instance}``, to a region of the same compute node that can
(Placement itself picks the candidates, with the group's resources and
traits and the lock traits it forbids), and the ARQ is bound there. Nova
reads the ARQ's ``device_rp_uuid`` and ``attach_handle_info`` from
cyborg_lite, and frees the instance's allocations as a whole on delete, so
the move is invisible to it.
"""

from oslo_log import log as logging

from accel_common import exception as common_exception
from cyborg_lite import states
from cyborg_lite.db import attach_handles as handle_db
from cyborg_lite.db import deployables as deployable_db
from cyborg_lite.programming import regions
from cyborg_lite.scheduling import locks as locks_mod

LOG = logging.getLogger(__name__)

#: the suffix of the request group sent to Placement.
_SUFFIX = "_ACCEL"


def _resources(group):
    return {key[len("resources:"):]: int(value)
            for key, value in group.items()
            if key.startswith("resources:")}


def _traits(group):
    required = []
    for key, value in group.items():
        if not key.startswith("trait:"):
            continue
        name = key[len("trait:"):]
        if value == "required":
            required.append(name)
        elif value == "forbidden":
            required.append("!" + name)
    return sorted(required)


def _holds(body, rp_uuid, resources):
    """Does a consumer's allocations (``GET /allocations/{consumer}``)
    hold ``resources`` on ``rp_uuid``?"""
    held = body.get("allocations", {}).get(rp_uuid, {}).get("resources", {})
    return all(held.get(rc, 0) >= n for rc, n in resources.items())


def can_serve(session, rp_uuid, group, contents):
    """Can the region of ``rp_uuid`` take an ARQ of ``group`` at once or
    by programming, as the database says now?"""
    deployable, device = deployable_db.with_device_by_rp(session, rp_uuid)
    if (deployable is None or device.status != states.DeviceStatus.ENABLED
            or deployable.state != regions.READY):
        return False
    if not handle_db.free_count(session, deployable.id):
        return False
    lock = locks_mod.wanted_locks(session, [deployable.id]).get(rp_uuid)
    allowed = locks_mod.group_allows(group, contents)
    return lock is None or allowed is None or lock in allowed


class SiblingMover:
    """Moves an instance's allocation to a sibling region.

    :param db: the :class:`~cyborg_lite.db.engine.Database`.
    :param providers: a :class:`~.providers.RegionProviders`.
    :param attempts: candidates tried before giving up.
    """

    def __init__(self, db, providers, attempts=4):
        self.db = db
        self.providers = providers
        self.attempts = attempts

    @property
    def enabled(self):
        """True when Placement is part of the deployment."""
        return self.providers.enabled

    def move(self, consumer, rp_uuid, group, avoid=()):
        """Move ``consumer``'s allocation of ``group``'s resources from
        ``rp_uuid`` to another region under the same root provider that
        can serve ``group``.

        :param avoid: providers not to move to (tried already).
        :returns: the new provider's uuid, or None when there is none (or
            the consumer has no such allocation on ``rp_uuid``).
        """
        if not self.enabled:
            return None
        resources = _resources(group)
        client = self.providers.client()
        # NOTE(cyborg_lite): a bind without an allocation behind it (a
        # client other than Nova, the DRA plugin) has nothing to move:
        # asked first, it costs one read instead of the candidates query.
        if not resources or not _holds(
                client.consumer_allocations(consumer), rp_uuid, resources):
            return None
        try:
            provider = client.provider(rp_uuid)
        except common_exception.PlacementError as error:
            LOG.info("No sibling for %s: %s", rp_uuid, error)
            return None
        if provider is None:
            return None
        root = provider["root_provider_uuid"]
        contents = self.db.read(deployable_db.contents)
        wanted = locks_mod.scheduling_groups([group], contents)[0]
        client.ensure_traits(locks_mod.forbidden_traits([group], contents))
        params = {f"resources{_SUFFIX}": ",".join(
                      f"{rc}:{n}" for rc, n in sorted(resources.items())),
                  f"in_tree{_SUFFIX}": root, "limit": 50}
        traits = _traits(wanted)
        if traits:
            params[f"required{_SUFFIX}"] = ",".join(traits)
        answer = client.candidates(params)
        tried = set(avoid) | {rp_uuid}
        found = []
        for request in answer.get("allocation_requests", []):
            for candidate in request.get("mappings", {}).get(_SUFFIX, []):
                if candidate not in tried and candidate not in found:
                    found.append(candidate)
        for candidate in found[:self.attempts]:
            if not self.db.read(can_serve, candidate, group, contents):
                continue
            if self._move(client, consumer, rp_uuid, candidate, resources):
                LOG.info("Instance %s: allocation moved from region %s to "
                         "%s, which can serve %s", consumer, rp_uuid,
                         candidate, group)
                return candidate
        return None

    def move_to(self, consumer, source, target, group):
        """Move ``consumer``'s allocation of ``group``'s resources from
        ``source`` to ``target``; False when there is nothing to move (no
        Placement, no such allocation) or Placement refused it."""
        resources = _resources(group)
        if not self.enabled or not resources:
            return False
        client = self.providers.client()
        if not self._move(client, consumer, source, target, resources):
            return False
        LOG.info("Instance %s: allocation moved from region %s to %s, which "
                 "serves %s already", consumer, source, target, group)
        return True

    @staticmethod
    def _move(client, consumer, source, target, resources):
        """One ``PUT /allocations/{consumer}`` moving ``resources`` from
        ``source`` to ``target``; False when Placement refused it (the
        consumer changed, or ``target`` filled up)."""
        body = client.consumer_allocations(consumer)
        if not _holds(body, source, resources):
            return False
        allocations = {rp: dict(alloc["resources"])
                       for rp, alloc in body.get("allocations", {}).items()}
        held = allocations[source]
        for rc, n in resources.items():
            held[rc] -= n
            if not held[rc]:
                del held[rc]
            moved = allocations.setdefault(target, {})
            moved[rc] = moved.get(rc, 0) + n
        if not held:
            del allocations[source]
        new = {"allocations": {rp: {"resources": res}
                               for rp, res in allocations.items()},
               "consumer_generation": body.get("consumer_generation"),
               "project_id": body["project_id"],
               "user_id": body["user_id"]}
        # NOTE(cyborg_lite): Nova 34 writes its allocations at microversion
        # 1.36, so Placement reads their type back as "unknown", which a PUT
        # at 1.38 and later (this client's) refuses with 400; the consumer
        # is an instance.
        consumer_type = body.get("consumer_type")
        new["consumer_type"] = (consumer_type if consumer_type
                                and consumer_type != "unknown"
                                else "INSTANCE")
        try:
            client.put_consumer_allocations(consumer, new)
        except common_exception.PlacementError as error:
            LOG.info("Moving instance %s's allocation to %s refused: %s",
                     consumer, target, error)
            return False
        return True
