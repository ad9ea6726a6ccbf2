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

"""What the scheduler sees of a region's content: lock traits.

A region is *locked* while an attach handle of its programming unit is in
use (on a ``single``-mode device: any handle of the device), while it is
being programmed, or while lookup routing keeps it for a content
(:mod:`cyborg_lite.scheduling.routing`). A locked region can only serve a
group that asks for what it runs (or is being programmed with, or is kept
for), or for no function at all, until its last consumer leaves.
cyborg_lite marks the resource provider of each locked region with one lock
trait naming that content (:func:`accel_common.inventory.lock_trait`).
Nova's lookup of a boot's profile is answered with the group requiring the
lock trait of the content it was routed to; a group routing leaves alone
forbids the lock traits of every other content any region has
(:func:`scheduling_groups`): Nova 34 turns ``trait:X=required|forbidden``
into the group's required and forbidden traits, so its scheduler only
allocates a region that serves the group (a region in error has
``reserved = total``).

Lock traits are written after the database changed (bind, unbind, delete,
the end of a programming run) and before the API answers; each write reads
the provider first, then the database, then writes generation-checked, so
of two concurrent writers the one that read the older state fails and
retries (:meth:`LockTraits.sync`). The reconciler repairs what a failed
write left (:meth:`LockTraits.repair`).
"""

import threading

from oslo_log import log as logging

from accel_common import inventory
from cyborg_lite.db import attach_handles as handle_db
from cyborg_lite.db import deployables as deployable_db
from cyborg_lite.db import models
from cyborg_lite.programming import regions

LOG = logging.getLogger(__name__)

#: group keys that ask for a function in the region.
FUNCTION_KEY = "accel:function_id"
BITSTREAM_KEY = "accel:bitstream_id"


def kept_for(deployable, now=None):
    """``(function_id, bitstream_id)`` the region is kept for by lookup
    routing (both None: for no function), or None when it is not kept
    (:mod:`cyborg_lite.scheduling.routing`)."""
    until = deployable.assigned_until
    if until is None or until <= (now or models.utcnow()):
        return None
    return deployable.assigned_function_id, deployable.assigned_bitstream_id


def region_lock(deployable, unit_in_use, now=None):
    """The lock trait a region's provider should carry, or None.

    :param deployable: the region's row.
    :param unit_in_use: attach handles in use in its programming unit.
    """
    if deployable.retired:
        return None
    if deployable.state == regions.PROGRAMMING:
        return inventory.lock_trait(deployable.target_function_id,
                                    deployable.target_bitstream_id)
    if deployable.state != regions.READY:
        return None
    if unit_in_use:
        return inventory.lock_trait(deployable.function_id,
                                    deployable.bitstream_id)
    kept = kept_for(deployable, now)
    return None if kept is None else inventory.lock_trait(*kept)


def wanted_locks(session, deployable_ids=None):
    """``{rp_uuid: lock trait or None}`` of these regions (and the other
    regions of their ``single``-mode devices), or of every live region."""
    rows = deployable_db.with_devices_for_locks(session, deployable_ids)
    in_use = handle_db.in_use_counts(session, [d.id for d, _ in rows])
    per_device = {}
    for deployable, device in rows:
        per_device[device.id] = (per_device.get(device.id, 0)
                                 + in_use.get(deployable.id, 0))
    wanted = {}
    now = models.utcnow()
    for deployable, device in rows:
        count = (per_device[device.id] if device.program_mode == "single"
                 else in_use.get(deployable.id, 0))
        wanted[deployable.rp_uuid] = region_lock(deployable, count, now)
    return wanted


def lock_of(session, rp_uuid):
    """The lock trait one provider should carry now (None: no lock, or
    the region is gone)."""
    deployable = deployable_db.by_rp(session, rp_uuid)
    if deployable is None:
        return None
    return wanted_locks(session, [deployable.id]).get(rp_uuid)


def group_allows(group, contents):
    """The lock traits of the regions a group can use while they are
    locked; None for a group that asks for no function (any will do).

    :param contents: ``(function_id, bitstream_id)`` pairs regions run
        (:func:`accel_common.inventory` naming).
    """
    function_id = group.get(FUNCTION_KEY)
    if function_id:
        return {inventory.lock_trait(function_id)}
    bitstream_id = group.get(BITSTREAM_KEY)
    if bitstream_id:
        # NOTE(cyborg_lite): a region loaded from this image is locked
        # under the function the image carries.
        return {inventory.lock_trait(bitstream_id=bitstream_id)} | {
            inventory.lock_trait(function)
            for function, bitstream in contents
            if function and bitstream == bitstream_id}
    return None


def known_locks(contents):
    """Every lock trait a region could carry with these contents."""
    return {inventory.lock_trait(f, b) for f, b in contents} | {
        inventory.lock_trait()}


def scheduling_groups(groups, contents):
    """A profile's groups as Nova's scheduler must read them: each group
    asking for a function also forbids every other known lock trait.

    A key the group already has is kept as written.

    :param groups: the stored groups (list of dicts).
    :param contents: see :func:`group_allows`.
    :returns: new group dicts (the stored ones are not changed).
    """
    known = None
    answer = []
    for group in groups:
        allowed = group_allows(group, contents)
        if allowed is None:
            answer.append(group)
            continue
        if known is None:
            known = known_locks(contents)
        extra = {f"trait:{trait}": "forbidden"
                 for trait in sorted(known - allowed)}
        answer.append({**extra, **group})
    return answer


def forbidden_traits(groups, contents):
    """Every lock trait :func:`scheduling_groups` adds (to create them in
    Placement before Nova asks for them: Placement refuses an unknown
    forbidden trait)."""
    traits = set()
    for group in scheduling_groups(groups, contents):
        traits |= {key[len("trait:"):] for key, value in group.items()
                   if key.startswith("trait:" + inventory.LOCK_TRAIT_PREFIX)
                   and value == "forbidden"}
    return traits


class LockTraits:
    """Writes the lock traits of regions' providers.

    :param db: the :class:`~cyborg_lite.db.engine.Database`.
    :param providers: a :class:`~.providers.RegionProviders`.
    """

    def __init__(self, db, providers):
        self.db = db
        self.providers = providers
        self._lock = threading.Lock()
        #: rp_uuid -> the lock trait last seen written (repair skips those
        #: whose wanted trait is the same).
        self._written = {}

    @property
    def enabled(self):
        """True when Placement is part of the deployment."""
        return self.providers.enabled

    def contents(self):
        """What regions run, are being programmed with or are kept for
        (read only), for :func:`scheduling_groups`."""
        return self.db.read(deployable_db.contents)

    def ensure_known(self, groups, contents):
        """Create in Placement the lock traits ``groups`` forbid once
        answered to Nova (Placement refuses an unknown forbidden trait).

        :param contents: from :meth:`contents`.
        :returns: False when Placement could not create them (the groups
            are then answered as stored).
        """
        if not self.enabled:
            return True
        traits = forbidden_traits(groups, contents)
        if not traits:
            return True
        try:
            self.providers.client().ensure_traits(traits)
        except Exception as error:
            LOG.warning("Profile answered without lock traits: Placement "
                        "did not create %s: %s",
                        ", ".join(sorted(traits)), error)
            return False
        return True

    def sync(self, deployable_ids):
        """Bring the lock traits of these regions (and the other regions
        of their ``single``-mode devices) in line with the database.

        Never raises: a failed write is logged and left to :meth:`repair`.

        :returns: the providers whose write failed.
        """
        if not self.enabled or not deployable_ids:
            return []
        wanted = self.db.read(wanted_locks, list(deployable_ids))
        return self._write(wanted)

    def ensure_written(self, regions_traits):
        """Make sure these regions carry these lock traits in Placement
        before an answer relies on them: those whose trait no API process
        recorded as written (``deployables.lock_written``: another lookup
        may have kept one a moment ago and still be writing it) are synced
        now. Never raises.

        :param regions_traits: ``{rp uuid: (deployable id, lock trait,
            lock trait recorded as written)}``.
        :returns: the providers whose write failed.
        """
        stale = [ident for ident, trait, written in regions_traits.values()
                 if written != trait]
        return self.sync(stale) if stale else []

    def repair(self):
        """Sync every live region whose wanted lock trait differs from the
        one this process last saw written (all of them after a start).

        :returns: the providers written, and those whose write failed.
        """
        if not self.enabled:
            return [], []
        wanted = self.db.read(wanted_locks)
        with self._lock:
            stale = {rp: trait for rp, trait in wanted.items()
                     if rp not in self._written
                     or self._written[rp] != trait}
        failed = self._write(stale)
        return sorted(set(stale) - set(failed)), failed

    def _write(self, wanted):
        failed = []
        for rp_uuid in sorted(wanted):
            state = {}

            def current(rp_uuid=rp_uuid, state=state):
                # NOTE(cyborg_lite): read after the provider: see the
                # module doc.
                state["trait"] = self.db.read(lock_of, rp_uuid)
                return state["trait"]

            try:
                generation = self.providers.set_lock_trait(rp_uuid, current)
            except Exception as error:
                LOG.warning("Lock trait of resource provider %s not "
                            "written: %s", rp_uuid, error)
                failed.append(rp_uuid)
                with self._lock:
                    self._written.pop(rp_uuid, None)
                continue
            with self._lock:
                if generation is None:
                    # NOTE(cyborg_lite): not in Placement (standalone).
                    self._written[rp_uuid] = wanted[rp_uuid]
                else:
                    self._written[rp_uuid] = state.get("trait",
                                                       wanted[rp_uuid])
                written = self._written[rp_uuid]
            if generation is not None:
                try:
                    self.db.run(deployable_db.note_lock_written, rp_uuid,
                                written)
                except Exception as error:
                    # NOTE(cyborg_lite): the next answer relying on it
                    # writes it again.
                    LOG.warning("Lock trait of resource provider %s written "
                                "but not recorded: %s", rp_uuid, error)
        return failed
