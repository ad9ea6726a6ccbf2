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

"""Queries of the ``arqs`` table: accelerator requests and the
bookkeeping of their Nova events."""

import collections

from oslo_db import exception as db_exc
import sqlalchemy as sa
from sqlalchemy.orm import attributes

from cyborg_lite import arq_states
from cyborg_lite import exception
from cyborg_lite import states
from cyborg_lite.db import device_profiles as profile_db
from cyborg_lite.db import engine
from cyborg_lite.db import models


@engine.transactional
def create_many(session, profile_ident, project_id, specs):
    """Create ARQs for ``specs``: a list of ``device_profile_group_id``.

    :returns: the new ARQ rows.
    """
    return _add(session, profile_db.get(session, profile_ident),
                     project_id, specs)


_INSERT_ONE = sa.insert(models.ARQ.__table__)
#: the new ARQs in one INSERT, their ids back (RETURNING, in the order of
#: the rows).
_INSERT = _INSERT_ONE.returning(models.ARQ.__table__.c.id,
                                sort_by_parameter_order=True)


def _insert(session, rows):
    """Insert ARQ rows; their ids."""
    if session.get_bind().dialect.\
            insert_executemany_returning_sort_by_parameter_order:
        return session.execute(_INSERT, rows).scalars().all()
    # NOTE(cyborg_lite): no INSERT ... RETURNING (sqlite before 3.35,
    # MariaDB before 10.5): one INSERT per row, its id from the driver.
    return [session.execute(_INSERT_ONE, row).inserted_primary_key[0]
            for row in rows]


def _one_insert(session, count):
    """Whether :func:`_insert` inserts ``count`` rows in one statement."""
    dialect = session.get_bind().dialect
    return count == 1 or (
        dialect.insert_executemany_returning_sort_by_parameter_order
        and count <= dialect.insertmanyvalues_page_size)


class _NeedsTransaction(Exception):
    """The rows cannot be inserted in one statement."""


class _Forgotten(Exception):
    """The remembered profile is gone."""


def _add(session, profile, project_id, specs, single=False,
         remembered=False, service=False):
    """Insert the ARQ rows of ``specs`` (device profile group ids).

    :param single: the caller runs in autocommit: raise
        :class:`_NeedsTransaction` before writing anything when the rows
        would need more than one statement.
    :param remembered: ``profile`` was not read now: raise
        :class:`_Forgotten` when it no longer exists.
    """
    # NOTE(cyborg_lite): a Core INSERT, not the ORM's unit of work: on the
    # create of every boot, its flush cost more than the statement.
    now = models.utcnow()
    rows = [dict(uuid=engine.new_uuid(), state=arq_states.INITIAL,
                 device_profile_id=profile.id,
                 device_profile_name=profile.name,
                 device_profile_group_id=group_id, project_id=project_id,
                 hostname=None, device_rp_uuid=None, instance_uuid=None,
                 deployable_id=None, notification=None, created_at=now,
                 updated_at=None, created_by_service=service)
            for group_id in specs]
    if not rows:
        return []
    if single and not _one_insert(session, len(rows)):
        raise _NeedsTransaction()
    name = profile.name  # NOTE(cyborg_lite): a failed INSERT expires it
    try:
        ids = _insert(session, rows)
    except db_exc.DBReferenceError:
        if remembered:
            raise _Forgotten()
        # NOTE(cyborg_lite): the profile was deleted after it was read.
        raise exception.ConcurrentChange(
            reason=f"device profile {name} was deleted meanwhile")
    return [models.ARQ(id=arq_id, **row) for arq_id, row in zip(ids, rows)]


def _from_profile(session, profile_ident, project_id, amount, check_total,
                  single=False, profile=None, service=False):
    """``(new ARQ rows, the profile)``; ``profile`` is the one
    remembered for ``profile_ident`` (None: read it)."""
    remembered = profile is not None
    if not remembered:
        profile = profile_db.get(session, profile_ident)
    if check_total is not None:
        check_total(profile.groups)
    specs = [index for index, group in enumerate(profile.groups)
             for _ in range(amount(group))]
    return _add(session, profile, project_id, specs, single,
                remembered, service), profile


def create_from_profile(handle, profile_ident, project_id, amount,
                        check_total=None, created_by_service=False):
    """Create the ARQs a device profile asks for, all or none.

    Called with a :class:`~cyborg_lite.db.engine.Database`, the rows are
    inserted by one statement in autocommit, with the profile as last
    read through it (:func:`~cyborg_lite.db.device_profiles.remembered`;
    read first when it was not, or is gone: the INSERT fails on its
    foreign key then), or in one transaction where one statement cannot
    insert them all.

    :param handle: a Database, or a session (the caller's transaction).
    :param amount: ``amount(group) -> int``, how many ARQs a group needs.
    :param check_total: ``check_total(groups)``, raising when the profile
        asks for more than one request may create; called before any row
        is built.
    :param created_by_service: the request came with a service token.
    :raises DeviceProfileNotFound:
    :raises ConcurrentChange: the profile was deleted meanwhile.
    :returns: the new ARQ rows.
    """
    if not isinstance(handle, engine.Database):
        return _from_profile(handle, profile_ident, project_id, amount,
                             check_total, service=created_by_service)[0]
    profile = profile_db.remembered(handle, profile_ident)
    try:
        if profile is not None:
            try:
                return handle.autocommit(
                    _from_profile, profile_ident, project_id, amount,
                    check_total, single=True, profile=profile,
                    service=created_by_service)[0]
            except _Forgotten:
                profile_db.forget(handle, profile_ident)
        arqs, profile = handle.autocommit(
            _from_profile, profile_ident, project_id, amount, check_total,
            single=True, service=created_by_service)
    except _NeedsTransaction:
        arqs, profile = handle.run(_from_profile, profile_ident, project_id,
                                   amount, check_total,
                                   service=created_by_service)
    profile_db.remember(handle, profile_ident, profile)
    return arqs


_ARQS = models.ARQ.__table__


def _scope(stmt, project_id):
    if project_id is not None:
        stmt = stmt.where(models.ARQ.project_id == project_id)
    return stmt


@engine.reader
def get_all(session, project_id=None, instance_uuid=None, uuids=None,
             limit=None, marker=None):
    """ARQs filtered in SQL. ``project_id`` None means every project."""
    stmt = _scope(sa.select(models.ARQ), project_id)
    if instance_uuid is not None:
        stmt = stmt.where(models.ARQ.instance_uuid == instance_uuid)
    if uuids is not None:
        stmt = stmt.where(models.ARQ.uuid.in_(uuids))
    return engine.paginate(session, stmt, models.ARQ, limit, marker)


def _in(column, name, single):
    """``column IN :name``; ``column = :name`` for a ``single`` value
    (SQLAlchemy renders an expanding IN again on every execution)."""
    if single:
        return column == sa.bindparam(name)
    return column.in_(sa.bindparam(name, expanding=True))


_MOVES = {}


def _move_statement(allowed, columns):
    """``UPDATE arqs SET <columns> WHERE id = :arq_id AND state IN
    <allowed>``, built once per shape (a handful exist)."""
    stmt = _MOVES.get((allowed, columns))
    if stmt is None:
        # NOTE(cyborg_lite): on the table, not the ORM class: the caller's
        # object is kept in step below, without ORM-enabled UPDATE costs.
        stmt = (sa.update(_ARQS)
                .where(_ARQS.c.id == sa.bindparam("arq_id"),
                       _ARQS.c.state.in_(allowed))
                .values({column: sa.bindparam(f"new_{column}")
                         for column in columns}))
        _MOVES[(allowed, columns)] = stmt
    return stmt


def move(session, arq, target, via=None, **values):
    """Move ``arq`` to ``target`` with one conditional UPDATE (``WHERE
    state IN`` the states :data:`cyborg_lite.arq_states.TRANSITIONS` allows
    it from): the row is the lock, so two workers never both move it; a
    repeat of the move succeeds and changes nothing.

    :param session: an open SQLAlchemy session (the caller's transaction).
    :param arq: the ``models.ARQ`` row as last read.
    :param target: the new state.
    :param via: a state passed through inside this one UPDATE, so the ARQ
        may start from any predecessor of ``via`` (an instant bind goes
        ``Initial`` -> ``BindStarted`` -> ``Bound`` at once; no other
        transaction can see the middle state anyway).
    :param values: other columns to set in the same UPDATE.
    :raises ARQBadState: when the ARQ is in a state ``target`` cannot be
        entered from (as re-read from the database).
    :returns: True when the row changed, False when it already was in
        ``target`` (idempotent repeat).
    """
    allowed, stmt, params, values = move_parts(arq, target, via, values)
    if session.execute(stmt, params).rowcount == 1:
        moved(arq, values)
        return True
    return not_moved(session, arq, target, allowed)


def move_parts(arq, target, via, values):
    """``(allowed states, statement, parameters, values set)`` of a
    :func:`move`."""
    allowed = arq_states.TRANSITIONS[target if via is None else via]
    values = dict(values, state=target, updated_at=models.utcnow())
    stmt = _move_statement(allowed, tuple(sorted(values)))
    params = {f"new_{key}": value for key, value in values.items()}
    params["arq_id"] = arq.id
    return allowed, stmt, params, values


def moved(arq, values):
    """Keep ``arq`` in step with the ``values`` an UPDATE just wrote."""
    # NOTE(cyborg_lite): the row now holds exactly these values; no other
    # SELECT needed.
    for key, value in values.items():
        attributes.set_committed_value(arq, key, value)


def not_moved(session, arq, target, allowed):
    """After a conditional UPDATE that matched nothing: False when ``arq``
    already is in ``target``; :raises ARQBadState: otherwise."""
    current = session.execute(
        sa.select(models.ARQ.state).where(models.ARQ.id == arq.id)
    ).scalar_one_or_none()
    session.expire(arq)
    if current == target:
        return False
    raise exception.ARQBadState(uuid=arq.uuid, state=current,
                                action=f"moving to {target}",
                                expected=", ".join(allowed))


@engine.reader
def get(session, arq_uuid, project_id=None):
    """One ARQ; :raises ARQNotFound: also for another project's ARQ."""
    arq = session.execute(
        _scope(sa.select(models.ARQ), project_id).where(
            models.ARQ.uuid == arq_uuid)).scalar_one_or_none()
    if arq is None:
        raise exception.ARQNotFound(uuids=arq_uuid)
    return arq


_HANDLES_OF = sa.select(models.AttachHandle).where(
    models.AttachHandle.arq_id.in_(sa.bindparam("arqs", expanding=True)))


def handles_of(session, arq_ids):
    """{arq id: attach handle} for the ARQs holding one."""
    if not arq_ids:
        return {}
    rows = session.execute(_HANDLES_OF, {"arqs": list(arq_ids)}).scalars()
    return {handle.arq_id: handle for handle in rows}


_HANDLE_COLUMNS = ("uuid", "type", "pci_address", "mdev_type",
                   "physical_network")
_HANDLES = models.AttachHandle.__table__

#: Nova's resolve (``?instance=``, first page): each ARQ with the columns
#: of the attach handle it holds (an ARQ holds at most one), in one
#: statement, as plain rows.
#: the columns of an ARQ the API shows, and its id.
_SHOWN = ("id", "uuid", "state", "device_profile_name",
          "device_profile_group_id", "hostname", "device_rp_uuid",
          "instance_uuid", "project_id", "created_at", "updated_at")
_ARQ_WITH_HANDLE = (
    sa.select(*(_ARQS.c[name] for name in _SHOWN),
              *(_HANDLES.c[name].label(f"handle_{name}")
                for name in _HANDLE_COLUMNS))
    .select_from(_ARQS.outerjoin(_HANDLES, _HANDLES.c.arq_id == _ARQS.c.id))
    .where(_ARQS.c.instance_uuid == sa.bindparam("instance"))
    .order_by(_ARQS.c.id)
    .limit(sa.bindparam("limit", type_=sa.Integer)))
_OF_INSTANCE_WITH_HANDLES = {
    scoped: _scope(_ARQ_WITH_HANDLE,
                   sa.bindparam("project") if scoped else None)
    for scoped in (False, True)}

#: the attach handle columns of an :func:`of_instance_with_handles` row.
HandleRow = collections.namedtuple("HandleRow", _HANDLE_COLUMNS)


@engine.reader
def of_instance_with_handles(session, instance_uuid, project_id, limit):
    """The first page of an instance's ARQs (``limit`` of them) and
    ``{arq id: handle}`` of those holding an attach handle; read-only
    rows with the attributes of ``models.ARQ`` and ``models.AttachHandle``
    that the API shows."""
    rows = session.execute(
        _OF_INSTANCE_WITH_HANDLES[project_id is not None],
        {"instance": instance_uuid, "project": project_id,
         "limit": limit + 1}).all()
    page = engine.as_page(rows, limit)
    handles = {}
    for row in page:
        handle = HandleRow(*(getattr(row, f"handle_{name}")
                             for name in _HANDLE_COLUMNS))
        if handle.uuid is not None:
            handles[row.id] = handle
    return page, handles


@engine.reader
def instances_in_states(session, states, after, limit):
    """Instance uuids holding an ARQ in one of ``states``, in uuid order
    after ``after`` (``""``: from the first), at most ``limit``."""
    return list(session.execute(
        sa.select(models.ARQ.instance_uuid).distinct()
        .where(models.ARQ.instance_uuid.is_not(None),
               models.ARQ.instance_uuid > after,
               models.ARQ.state.in_(states))
        .order_by(models.ARQ.instance_uuid).limit(limit)).scalars())


_DELETE = sa.delete(_ARQS).where(
    _ARQS.c.id.in_(sa.bindparam("ids", expanding=True)))
_DELETE_ONE = sa.delete(_ARQS).where(_ARQS.c.id == sa.bindparam("id"))


def delete_rows(session, arq_ids):
    """Delete ARQ rows (their handles must be released first).

    :returns: the ids of the rows this call deleted: a concurrent delete
        of the same ARQs, committed first, leaves them out.
    """
    if not arq_ids:
        return set()
    if session.get_bind().dialect.delete_returning:
        return set(session.execute(_DELETE.returning(_ARQS.c.id),
                                   {"ids": list(arq_ids)}).scalars())
    # MySQL has no DELETE ... RETURNING: one statement per row, whose
    # rowcount says whether it was this one that deleted it.
    return {arq_id for arq_id in arq_ids
            if session.execute(_DELETE_ONE, {"id": arq_id}).rowcount == 1}


_PENDING = states.Notification.PENDING.value
_SENDING = states.Notification.SENDING.value

# NOTE(cyborg_lite): the bookkeeping UPDATEs name the table, not the ORM
# class: no ORM object is kept in step with them, and SQLAlchemy's
# ORM-enabled UPDATE costs a third of what the statement does.
_CLAIM = (sa.update(_ARQS)
          .where(_ARQS.c.uuid == sa.bindparam("arq"),
                 _ARQS.c.notification == _PENDING)
          .values(notification=_SENDING))
#: the claim of an ARQ the caller has just bound: when it still is, the
#: event is known without reading the row.
_CLAIM_BOUND = _CLAIM.where(
    _ARQS.c.state == arq_states.BOUND,
    _ARQS.c.instance_uuid == sa.bindparam("instance"))
_FINISH = {single: (sa.update(_ARQS)
                    .where(_in(_ARQS.c.uuid, "arqs", single),
                           _ARQS.c.notification == _SENDING)
                    .values(notification=sa.bindparam("outcome")))
           for single in (False, True)}
_EVENT_OF = sa.select(models.ARQ.uuid, models.ARQ.instance_uuid,
                      models.ARQ.state).where(
    models.ARQ.uuid == sa.bindparam("arq"))


#: the claim of several ARQs the caller has just bound, in one statement.
_CLAIM_ALL_BOUND = (
    sa.update(_ARQS)
    .where(sa.tuple_(_ARQS.c.uuid, _ARQS.c.instance_uuid).in_(
        sa.bindparam("pairs", expanding=True)),
        _ARQS.c.notification == _PENDING,
        _ARQS.c.state == arq_states.BOUND)
    .values(notification=_SENDING))


class _NotAllClaimed(Exception):
    """Rolls back a claim of several ARQs that did not match them all."""


def _claim_all_bound(session, pairs):
    if session.execute(_CLAIM_ALL_BOUND,
                       {"pairs": pairs}).rowcount != len(pairs):
        raise _NotAllClaimed()
    return [(arq, instance, arq_states.BOUND) for arq, instance in pairs]


_CLAIM_BOUND_RETURNING = _CLAIM_ALL_BOUND.returning(_ARQS.c.uuid)


def _claim_bound(session, pairs):
    """Claim, in one statement, those of ``pairs`` still bound as the
    caller bound them: ``(claimed, True)``, or ``(None, False)`` when the
    database cannot say which ones an UPDATE matched (no ``UPDATE ...
    RETURNING``: MySQL) and more than one was asked for."""
    if len(pairs) == 1:
        ((arq, instance),) = pairs
        if session.execute(_CLAIM_BOUND, {"arq": arq,
                                          "instance": instance}).rowcount:
            return pairs, True
        return [], True
    if not session.get_bind().dialect.update_returning:
        return None, False
    claimed = set(session.execute(_CLAIM_BOUND_RETURNING,
                                  {"pairs": pairs}).scalars())
    return [pair for pair in pairs if pair[0] in claimed], True


def _claim_each(session, arq_uuids, instances):
    claimed = []
    for arq_uuid in arq_uuids:
        instance = instances.get(arq_uuid)
        if instance is not None and session.execute(
                _CLAIM_BOUND, {"arq": arq_uuid, "instance": instance}
        ).rowcount == 1:
            claimed.append((arq_uuid, instance, arq_states.BOUND))
        elif session.execute(_CLAIM, {"arq": arq_uuid}).rowcount == 1:
            claimed.append(tuple(session.execute(
                _EVENT_OF, {"arq": arq_uuid}).one()))
    return claimed


def claim_notifications(db, arq_uuids, instances=None):
    """Claim ``pending`` events: only the worker whose UPDATE matched sends.

    :param db: the :class:`~cyborg_lite.db.engine.Database`.
    :param instances: ``{arq uuid: instance uuid}`` of ARQs the caller has
        just bound; each is claimed on condition that it is still
        ``Bound`` to that instance, else as any other. One UPDATE claims
        all such ones, in autocommit where the database says which it
        matched (PostgreSQL's ``RETURNING``, or a single ARQ); on MySQL,
        when every ARQ is such a one, in a transaction rolled back unless
        it matched every one. The rest are claimed each on its own.
    :returns: [(arq uuid, instance uuid, state)] claimed by this call.
    """
    arq_uuids = list(dict.fromkeys(arq_uuids))
    instances = instances or {}
    claimed = []
    pairs = [(a, instances[a]) for a in arq_uuids if a in instances]
    if pairs:
        # NOTE(cyborg_lite): one UPDATE claims them in autocommit where it
        # can say which it matched; the others are claimed on their own.
        found, known = db.autocommit(_claim_bound, pairs)
        if known:
            claimed = [(arq, instance, arq_states.BOUND)
                       for arq, instance in found]
            done = {arq for arq, _ in found}
            arq_uuids = [a for a in arq_uuids if a not in done]
            instances = {}  # NOTE(cyborg_lite): no longer bound as said
        elif len(pairs) == len(arq_uuids):
            try:
                return db.run(_claim_all_bound, pairs)
            except _NotAllClaimed:
                pass
    if not arq_uuids:
        return claimed
    return claimed + db.run(_claim_each, arq_uuids, instances)


@engine.single_write
def finish_notifications(session, arq_uuids, outcome):
    """Record ``sent`` or ``failed`` for claimed events."""
    arq_uuids = list(arq_uuids)
    single = len(arq_uuids) == 1
    session.execute(_FINISH[single], {
        "arqs": arq_uuids[0] if single else arq_uuids, "outcome": outcome})


@engine.transactional
def claim_stale_notifications(session, cutoffs, limit=None):
    """Claim events no live worker is sending, for a resend.

    One conditional UPDATE per ARQ (``WHERE notification = <as seen> AND
    updated_at < <cutoff>``, which also bumps ``updated_at``): when two
    workers race for the same ARQ, only one UPDATE matches.

    :param cutoffs: ``{notification value: naive UTC datetime}``: claim the
        ARQs in that bookkeeping state last changed before the datetime,
        e.g. ``{"pending": now - 60 s, "sending": now - 600 s}``.
    :param limit: claim at most this many.
    :returns: [(arq uuid, instance uuid, state)] claimed by this call.
    """
    if not cutoffs:
        return []
    changed = sa.func.coalesce(models.ARQ.updated_at, models.ARQ.created_at)
    conditions = {value: sa.and_(models.ARQ.notification == value,
                                 changed < cutoff)
                  for value, cutoff in cutoffs.items()}
    stmt = (sa.select(models.ARQ.id, models.ARQ.notification)
            .where(sa.or_(*conditions.values())).order_by(models.ARQ.id))
    if limit is not None:
        stmt = stmt.limit(limit)
    claimed = []
    for arq_id, seen in session.execute(stmt).all():
        result = session.execute(
            sa.update(models.ARQ)
            .where(models.ARQ.id == arq_id, conditions[seen])
            .values(notification=_SENDING, updated_at=models.utcnow())
            .execution_options(synchronize_session=False))
        if result.rowcount == 1:
            row = session.execute(
                sa.select(models.ARQ.uuid, models.ARQ.instance_uuid,
                          models.ARQ.state)
                .where(models.ARQ.id == arq_id)).one()
            claimed.append(tuple(row))
    return claimed


def set_deployable(session, arq_id, deployable_id):
    """Record the region an ARQ waits for (or holds)."""
    session.execute(
        sa.update(models.ARQ).where(models.ARQ.id == arq_id)
        .values(deployable_id=deployable_id)
        .execution_options(synchronize_session=False))
