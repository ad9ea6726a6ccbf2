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

"""Queries of the ``deployables`` table (regions)."""

import sqlalchemy as sa
from sqlalchemy import orm

from cyborg_lite import exception
from cyborg_lite import states
from cyborg_lite.db import engine
from cyborg_lite.db import models


def by_rp(session, rp_uuid):
    """The live deployable whose resource provider is ``rp_uuid``."""
    return with_device_by_rp(session, rp_uuid)[0]


_D, _V = models.Deployable, models.Device
_ENABLED = states.DeviceStatus.ENABLED.value
_READY = states.RegionState.READY.value
_PROGRAMMING = states.RegionState.PROGRAMMING.value
_WITH_DEVICE_BY_RP = (
    sa.select(_D, _V).join(_V, _D.device_id == _V.id)
    .where(_D.rp_uuid == sa.bindparam("rp"), _D.retired.is_(False)))
#: the columns of a region and its device a bind reads (any other is
#: loaded when first used, in the same transaction): PyMySQL parses every
#: column's description of every result in Python.
BIND_COLUMNS = (
    orm.load_only(_D.id, _D.uuid, _D.device_id, _D.rp_uuid, _D.state,
                  _D.function_id, _D.bitstream_id, _D.target_function_id,
                  _D.target_bitstream_id, _D.assigned_function_id,
                  _D.assigned_bitstream_id, _D.assigned_until, _D.retired),
    orm.load_only(_V.id, _V.type, _V.status, _V.program_mode, _V.hostname,
                  _V.retired))
#: the same under a shared lock on the region's row (PostgreSQL: ``FOR
#: SHARE OF deployables``; MySQL has no ``OF`` and locks the device's row
#: too), re-read as the lock is granted.
_WITH_DEVICE_BY_RP_SHARED = (
    _WITH_DEVICE_BY_RP.with_for_update(read=True, of=_D)
    .options(*BIND_COLUMNS)
    .execution_options(populate_existing=True))

#: group keys that ask for a content in the region.
PROGRAMMING_KEYS = ("accel:function_id", "accel:bitstream_id")


def asks_content(group):
    """Whether a device profile group asks for a function or bitstream."""
    return any(group.get(key) for key in PROGRAMMING_KEYS)


def needs_programming(group, deployable):
    """Does binding an ARQ of ``group`` to ``deployable`` need programming?

    The one place that decides it. A group that asks for nothing, or for
    what the region already runs (``accel:function_id`` against the
    region's ``function_id``, ``accel:bitstream_id`` against its
    ``bitstream_id``), binds instantly.

    :returns: None when the bind is instant, else ``(key, asked)``.
    """
    for key in PROGRAMMING_KEYS:
        asked = group.get(key)
        if not asked:
            continue
        running = (deployable.function_id if key == "accel:function_id"
                   else deployable.bitstream_id)
        if asked != running:
            return key, asked
    return None


def with_device_by_rp(session, rp_uuid, lock_shared=False):
    """``(deployable, device)`` of the live deployable whose resource
    provider is ``rp_uuid``, in one query, or ``(None, None)``.

    :param lock_shared: read the region's row under a shared lock (see
        :func:`lock_shared`): it then stays as read until the transaction
        ends.
    """
    locked = lock_shared and _row_locks(session)
    row = session.execute(
        _WITH_DEVICE_BY_RP_SHARED if locked else _WITH_DEVICE_BY_RP,
        {"rp": rp_uuid}).one_or_none()
    return tuple(row) if row else (None, None)


def _row_locks(session):
    # NOTE(cyborg_lite): a sqlite transaction begins IMMEDIATE, holding
    # the database's one write lock: what it reads is current already.
    return session.get_bind().dialect.name != "sqlite"


def lock_shared(session, deployable_id):
    """Re-read a region under a shared row lock (``FOR SHARE``).

    Instant binds hold it while they reserve a handle, so a programming
    start (exclusive) either waits for them or is seen by them.
    """
    if not _row_locks(session):
        row = session.get(_D, deployable_id)
        if row is not None:
            return row
    return session.execute(
        sa.select(_D).where(_D.id == deployable_id)
        .with_for_update(read=True)
        .execution_options(populate_existing=True)).scalar_one()


@engine.reader
def get_all(session, device_id=None, rp_uuid=None, name=None,
                    limit=None, marker=None):
    """Deployables filtered in SQL."""
    stmt = sa.select(models.Deployable)
    for column, value in ((models.Deployable.device_id, device_id),
                          (models.Deployable.rp_uuid, rp_uuid),
                          (models.Deployable.name, name)):
        if value is not None:
            stmt = stmt.where(column == value)
    return engine.paginate(session, stmt, models.Deployable, limit, marker)


@engine.reader
def get(session, deployable_uuid):
    """One deployable by uuid; :raises DeployableNotFound:"""
    deployable = session.execute(
        sa.select(models.Deployable).where(
            models.Deployable.uuid == deployable_uuid)).scalar_one_or_none()
    if deployable is None:
        raise exception.DeployableNotFound(ident=deployable_uuid)
    return deployable


def providers_of_device(session, device_id):
    """``[(rp_uuid, state)]`` of a device's live deployables."""
    rows = session.execute(
        sa.select(models.Deployable.rp_uuid, models.Deployable.state)
        .where(models.Deployable.device_id == device_id,
               models.Deployable.retired.is_(False))
        .order_by(models.Deployable.id)).all()
    return [tuple(row) for row in rows]


def set_last_error(session, deployable_ids, error):
    """Set ``last_error`` of these deployables."""
    session.execute(
        sa.update(models.Deployable)
        .where(models.Deployable.id.in_(deployable_ids))
        .values(last_error=error)
        .execution_options(synchronize_session=False))


def with_devices_of_types(session, device_types):
    """``[(deployable, device)]`` of the live deployables of live devices
    of these types, by deployable id."""
    return session.execute(
        sa.select(models.Deployable, models.Device)
        .join(models.Device, models.Deployable.device_id == models.Device.id)
        .where(models.Deployable.retired.is_(False),
               models.Device.retired.is_(False),
               models.Device.type.in_(device_types))
        .order_by(models.Deployable.id)).all()


def with_devices_for_locks(session, deployable_ids=None):
    """``[(deployable, device)]`` of live deployables (these, or all), with
    every other live region of a ``single``-mode device among them: the
    regions whose lock state the caller works out together."""
    D, V = models.Deployable, models.Device
    stmt = (sa.select(D, V).join(V, D.device_id == V.id)
            .where(D.retired.is_(False)))
    if deployable_ids is not None:
        if not deployable_ids:
            return []
        single = (sa.select(D.device_id).join(V, D.device_id == V.id)
                  .where(D.id.in_(deployable_ids),
                         V.program_mode == "single"))
        stmt = stmt.where(sa.or_(D.id.in_(deployable_ids),
                                 D.device_id.in_(single)))
    return [tuple(row) for row in session.execute(stmt.order_by(D.id))]


def contents(session):
    """The distinct ``(function_id, bitstream_id)`` pairs live regions run,
    are being programmed with (targets included) or were kept for by
    lookup routing."""
    D = models.Deployable
    live = D.retired.is_(False)
    rows = session.execute(sa.union(
        sa.select(D.function_id, D.bitstream_id).where(live),
        sa.select(D.target_function_id, D.target_bitstream_id)
        .where(live, D.state == _PROGRAMMING),
        sa.select(D.assigned_function_id, D.assigned_bitstream_id)
        .where(live, D.assigned_until.is_not(None)))).all()
    return {tuple(row) for row in rows}


def serving_sibling(session, deployable, hostname, function_id,
                    bitstream_id, avoid=()):
    """Another live region on ``hostname`` that runs ``function_id`` (or
    ``bitstream_id``), or is being programmed with it, and has a free
    attach handle: its provider's uuid (one that runs it first), or None.
    Regions whose provider is in ``avoid`` are not considered."""
    D, V, H = models.Deployable, models.Device, models.AttachHandle
    if function_id:
        runs = D.function_id == function_id
    else:
        runs = D.bitstream_id == bitstream_id
    free = (sa.select(sa.func.count(H.id))
            .where(H.deployable_id == D.id, H.in_use.is_(False),
                   H.retired.is_(False))
            .scalar_subquery())
    # NOTE(cyborg_lite): not a region lookup routing keeps for another
    # content (cyborg_lite.scheduling.routing).
    kept_elsewhere = sa.and_(
        D.assigned_until.is_not(None), D.assigned_until > models.utcnow(),
        sa.or_(D.assigned_function_id.is_distinct_from(function_id),
               D.assigned_bitstream_id.is_distinct_from(bitstream_id)))
    stmt = (sa.select(D.rp_uuid).join(V, D.device_id == V.id)
            .where(V.hostname == hostname, V.status == _ENABLED,
                   D.retired.is_(False), D.id != deployable.id,
                   D.rp_uuid.is_not(None), free > 0,
                   sa.not_(kept_elsewhere),
                   sa.or_(sa.and_(D.state == _READY, runs),
                          sa.and_(D.state == _PROGRAMMING,
                                  D.target_function_id == function_id,
                                  D.target_bitstream_id == bitstream_id)))
            .order_by((D.state == _PROGRAMMING), D.id))
    if avoid:
        stmt = stmt.where(D.rp_uuid.not_in(list(avoid)))
    return session.execute(stmt.limit(1)).scalar_one_or_none()


def note_lock_written(session, rp_uuid, trait):
    """Record the lock trait last written to a region's provider (any API
    process reads it before relying on it)."""
    session.execute(
        sa.update(models.Deployable)
        .where(models.Deployable.rp_uuid == rp_uuid)
        .values(lock_written=trait)
        .execution_options(synchronize_session=False))
