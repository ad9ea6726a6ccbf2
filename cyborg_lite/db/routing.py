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

"""Queries of lookup routing: the router's row, the lookups not bound yet,
the regions and their handles as routing counts them, and the regions
kept for a content (:mod:`cyborg_lite.scheduling.routing`)."""

import collections

import sqlalchemy as sa

from cyborg_lite import states
from cyborg_lite.db import models

_D, _V, _H = models.Deployable, models.Device, models.AttachHandle
_L = models.SchedulingLookup


def lock_router(session):
    """Take the router's row for this transaction: routings run one at a
    time (sqlite: the transaction is ``BEGIN IMMEDIATE`` already)."""
    if session.get_bind().dialect.name == "sqlite":
        return
    session.execute(sa.select(models.SchedulingRouter.id)
                    .where(models.SchedulingRouter.id == 1)
                    .with_for_update()).all()


def live_lookups(session, now):
    """Drop the expired lookups; ``{lock trait: units}`` of the others."""
    session.execute(sa.delete(_L).where(_L.expires_at <= now)
                    .execution_options(synchronize_session=False))
    return dict(session.execute(
        sa.select(_L.lock_trait, sa.func.sum(_L.units))
        .group_by(_L.lock_trait)).all())


def add_lookup(session, lock_trait, units, now, until, function_trait=None):
    """Count ``units`` against ``lock_trait``'s free handles until
    ``until`` (``function_trait``: a function pool's lookup)."""
    session.execute(sa.insert(_L).values(
        lock_trait=lock_trait, units=units, function_trait=function_trait,
        created_at=now, expires_at=until))


def pool_traits(session, lock_trait):
    """``{function trait: units}`` of the live function pools' lookups
    counted against ``lock_trait``."""
    return dict(session.execute(
        sa.select(_L.function_trait, sa.func.sum(_L.units))
        .where(_L.lock_trait == lock_trait, _L.function_trait.is_not(None))
        .group_by(_L.function_trait)).all())


def regions(session, resource_class):
    """``[(deployable, device)]`` of the live regions of this resource
    class on live, enabled devices, with a resource provider."""
    return [tuple(row) for row in session.execute(
        sa.select(_D, _V).join(_V, _D.device_id == _V.id)
        .where(_D.retired.is_(False), _V.retired.is_(False),
               _V.status == states.DeviceStatus.ENABLED,
               _D.rp_uuid.is_not(None),
               _D.resource_class == resource_class)
        .order_by(_D.id))]


def handles(session, deployable_ids):
    """``{deployable id: (live handles, handles in use)}``."""
    if not deployable_ids:
        return {}
    rows = session.execute(
        sa.select(_H.deployable_id, sa.func.count(_H.id),
                  sa.func.sum(sa.case((_H.in_use.is_(True), 1), else_=0)))
        .where(_H.deployable_id.in_(deployable_ids), _H.retired.is_(False))
        .group_by(_H.deployable_id))
    return {deployable_id: (total, int(in_use or 0))
            for deployable_id, total, in_use in rows}


def consume(session, lock_traits):
    """Drop the oldest live lookup of each of these lock traits (one per
    entry): its boot is bound."""
    wanted = collections.Counter(lock_traits)
    rows = session.execute(
        sa.select(_L.id, _L.lock_trait)
        .where(_L.lock_trait.in_(list(wanted)))
        .order_by(_L.id)).all()
    for lookup_id, trait in rows:
        if wanted[trait] > 0:
            # NOTE(cyborg_lite): one row at a time: a concurrent bind may
            # have consumed the same oldest row (its DELETE then matches
            # nothing here, and the next row is taken instead).
            wanted[trait] -= session.execute(
                sa.delete(_L).where(_L.id == lookup_id)
                .execution_options(synchronize_session=False)).rowcount


def release(session, lock_traits, lock_of):
    """End the keeps of those of these lock traits' contents that have no
    lookup waiting any more.

    :param lock_of: ``(function_id, bitstream_id) -> lock trait``.
    :returns: ids of the regions no longer kept.
    """
    waiting = {trait for (trait,) in session.execute(
        sa.select(_L.lock_trait).distinct()
        .where(_L.lock_trait.in_(list(set(lock_traits)))))}
    done = set(lock_traits) - waiting
    if not done:
        return []
    kept = session.execute(
        sa.select(_D.id, _D.assigned_function_id, _D.assigned_bitstream_id)
        .where(_D.assigned_until.is_not(None))).all()
    released = [d for d, function, bitstream in kept
                if lock_of(function, bitstream) in done]
    if released:
        session.execute(
            sa.update(_D).where(_D.id.in_(released))
            .values(assigned_until=None)
            .execution_options(synchronize_session=False))
    return released


def keep_for(session, deployable_ids, function_id, bitstream_id, until):
    """Keep these regions for a content until ``until``."""
    if not deployable_ids:
        return
    session.execute(
        sa.update(_D).where(_D.id.in_(list(deployable_ids)))
        .values(assigned_function_id=function_id,
                assigned_bitstream_id=bitstream_id, assigned_until=until)
        .execution_options(synchronize_session=False))
