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

"""``cyborg-lite-manage db purge``: delete the rows nothing needs any more.

Deleting an accelerator request deletes its row (there are no soft
deletes), and its Nova event is a column of that row. What is left behind
and is never deleted otherwise:

- ``scheduling_lookups`` that expired (the next lookup deletes them; none
  comes when lookups stop);
- ``arqs`` never bound (``Initial``) or whose bind failed
  (``BindFailed``), unchanged since the cutoff: Nova deletes both when the
  boot ends, so those left are from boots whose clean-up never reached the
  API; never one holding an attach handle or with an event still to send;
- inventory rows ``retired`` while an instance used them (a device gone
  from its host's document) and free since: a sync deletes them only when
  it applies the host's document again, which it does only when the
  document changes; their ``attach_handles``, ``attributes``,
  ``deployables`` and ``devices``.

``inventory_applied`` is kept to the hosts Ironic has by every full sync,
and ``cyborg_imported`` is kept: it is what makes a second ``cyborg import``
skip what the first imported, even when deleted since.

Each batch is one short transaction deleting at most ``batch_size`` rows
by primary key, whose ``WHERE`` repeats the conditions, so a row a worker
changed since it was found (an ARQ bound meanwhile) is left alone and no
table is locked for long.
"""

import dataclasses

import sqlalchemy as sa
from sqlalchemy import orm

from cyborg_lite import arq_states
from cyborg_lite import states
from cyborg_lite.db import models

#: the ARQ states purged once unchanged long enough.
ARQ_STATES = (arq_states.INITIAL, arq_states.BIND_FAILED)
#: events of these states are still to be sent: their ARQs are kept.
UNSENT = (states.Notification.PENDING, states.Notification.SENDING)

#: the tables in the order of the report.
TABLES = ("scheduling_lookups", "arqs", "attach_handles", "attributes",
          "deployables", "devices")

_L = models.SchedulingLookup
_A = models.ARQ
_H = models.AttachHandle
_T = models.Attribute
_D = models.Deployable
_V = models.Device


def _changed(model):
    return sa.func.coalesce(model.updated_at, model.created_at)


def _lookups(cutoff):
    return _L.expires_at < cutoff


def _arqs(cutoff):
    held = sa.exists().where(_H.arq_id == _A.id)
    return sa.and_(_A.state.in_(ARQ_STATES), _changed(_A) < cutoff,
                   sa.or_(_A.notification.is_(None),
                          _A.notification.not_in(UNSENT)),
                   ~held)


def _free_retired_handles(cutoff):
    return sa.and_(_H.retired.is_(True), _H.in_use.is_(False),
                   _changed(_H) < cutoff)


def _deployables(cutoff, region=_D):
    used = sa.exists().where(_H.deployable_id == region.id,
                             _H.in_use.is_(True))
    return sa.and_(region.retired.is_(True), _changed(region) < cutoff,
                   ~used)


def _devices(cutoff, device=_V):
    region = orm.aliased(_D)
    kept = sa.exists().where(region.device_id == device.id,
                             ~_deployables(cutoff, region))
    return sa.and_(device.retired.is_(True), _changed(device) < cutoff,
                   ~kept)


def _handles_counted(cutoff):
    """The handles a purge deletes: retired and free, or of a region it
    deletes."""
    return sa.or_(_free_retired_handles(cutoff),
                  _H.deployable_id.in_(
                      sa.select(_D.id).where(_deployables(cutoff))))


def _attributes_counted(cutoff):
    return _T.deployable_id.in_(sa.select(_D.id).where(_deployables(cutoff)))


@dataclasses.dataclass(frozen=True)
class _Simple:
    """A table whose purgeable rows are deleted by key, batch by batch."""

    table: str
    key: object
    where: object


_SIMPLE = (_Simple("scheduling_lookups", _L.id, _lookups),
           _Simple("arqs", _A.id, _arqs),
           _Simple("attach_handles", _H.id, _free_retired_handles))
_AFTER_REGIONS = (_Simple("devices", _V.id, _devices),)


def count(db, cutoff):
    """What :func:`purge` would delete now, by table (a dry run).

    :param cutoff: naive UTC datetime; rows unchanged since are purged.
    :returns: ``{table: rows}`` in :data:`TABLES` order.
    """
    conditions = {"scheduling_lookups": (_L, _lookups),
                  "arqs": (_A, _arqs),
                  "attach_handles": (_H, _handles_counted),
                  "attributes": (_T, _attributes_counted),
                  "deployables": (_D, _deployables),
                  "devices": (_V, _devices)}

    def _run(session):
        return {table: session.execute(
            sa.select(sa.func.count()).select_from(model)
            .where(where(cutoff))).scalar_one()
            for table, (model, where) in conditions.items()}

    return db.read(_run)


def purge(db, cutoff, batch_size=1000, progress=None):
    """Delete what nothing needs any more (see the module doc).

    :param cutoff: naive UTC datetime; rows unchanged since are kept.
    :param batch_size: most rows of one table deleted per transaction.
    :param progress: called with ``(table, rows)`` after each batch.
    :returns: ``{table: rows deleted}`` in :data:`TABLES` order.
    """
    deleted = dict.fromkeys(TABLES, 0)

    def note(table, rows):
        deleted[table] += rows
        if progress is not None and rows:
            progress(table, rows)

    for target in _SIMPLE:
        _purge_simple(db, target, cutoff, batch_size, note)
    while True:
        rows = db.run(_purge_regions, cutoff, batch_size)
        for table, count_ in rows.items():
            note(table, count_)
        if not rows["deployables"]:
            break
    for target in _AFTER_REGIONS:
        _purge_simple(db, target, cutoff, batch_size, note)
    return deleted


def _purge_simple(db, target, cutoff, batch_size, note):
    where = target.where(cutoff)
    model_table = target.key.class_.__table__

    def _batch(session):
        keys = session.execute(sa.select(target.key).where(where)
                               .limit(batch_size)).scalars().all()
        if not keys:
            return None
        return session.execute(
            sa.delete(model_table)
            .where(model_table.c[target.key.key].in_(keys), where)
            .execution_options(synchronize_session=False)).rowcount

    while True:
        rows = db.run(_batch)
        if rows is None:
            return
        note(target.table, rows)


def _purge_regions(session, cutoff, batch_size):
    """One batch of retired regions with their handles and attributes."""
    where = _deployables(cutoff)
    # NOTE(cyborg_lite): locked, so a sync bringing a region back between
    # this read and the deletes waits, and the deletes still find it
    # retired.
    ids = session.execute(sa.select(_D.id).where(where).limit(batch_size)
                          .with_for_update()).scalars().all()
    rows = {"attach_handles": 0, "attributes": 0, "deployables": 0}
    if not ids:
        return rows
    rows["attach_handles"] = session.execute(
        sa.delete(_H.__table__)
        .where(_H.deployable_id.in_(ids), _H.in_use.is_(False))).rowcount
    rows["attributes"] = session.execute(
        sa.delete(_T.__table__).where(_T.deployable_id.in_(ids))).rowcount
    rows["deployables"] = session.execute(
        sa.delete(_D.__table__).where(_D.id.in_(ids), where)).rowcount
    return rows
