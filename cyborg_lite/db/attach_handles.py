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

"""Queries of the ``attach_handles`` table."""

import sqlalchemy as sa

from cyborg_lite import exception
from cyborg_lite.db import models

_H = models.AttachHandle
_FREE = (sa.select(_H.id)
         .where(_H.deployable_id == sa.bindparam("deployable"),
                _H.in_use.is_(False), _H.retired.is_(False))
         .order_by(_H.id)
         .limit(sa.bindparam("attempts", type_=sa.Integer)))
_TABLE = _H.__table__
_TAKE = (sa.update(_TABLE)
         .where(_TABLE.c.id == sa.bindparam("handle"),
                _TABLE.c.in_use.is_(False))
         .values(in_use=True, arq_id=sa.bindparam("arq"),
                 updated_at=sa.bindparam("now")))


#: one free handle taken in one statement (the lowest id, as in _FREE).
#: MySQL cannot name the updated table in a subquery; it has UPDATE ...
#: LIMIT instead, and hands the id back through LAST_INSERT_ID(id).
_TAKE_FIRST_MYSQL = sa.text(
    "UPDATE attach_handles SET in_use = 1, arq_id = :arq, "
    "updated_at = :now, id = LAST_INSERT_ID(id) "
    "WHERE deployable_id = :deployable AND in_use = 0 AND retired = 0 "
    "ORDER BY id LIMIT 1")


def _take_first_pg(*conditions):
    """PostgreSQL: take the first free handle no other transaction holds
    (and that ``conditions`` allow); returns its id."""
    first_free = (
        sa.select(_TABLE.c.id)
        .where(_TABLE.c.deployable_id == sa.bindparam("deployable"),
               _TABLE.c.in_use.is_(False), _TABLE.c.retired.is_(False),
               *conditions)
        .order_by(_TABLE.c.id).limit(1)
        .with_for_update(skip_locked=True).scalar_subquery())
    return (sa.update(_TABLE)
            .where(_TABLE.c.id == first_free)
            .values(in_use=True, arq_id=sa.bindparam("arq"),
                    updated_at=sa.bindparam("now"))
            .returning(_TABLE.c.id))


_TAKE_FIRST_PG = _take_first_pg()

#: :func:`_take_first` (or :func:`take_free_moving`) did not try.
UNTRIED = object()


def _take_first(session, deployable_id, arq_id):
    """Take the first free handle in one statement: its id, None when none
    is free; :data:`UNTRIED` on sqlite, or when the free handles are all
    held by concurrent transactions on PostgreSQL (the caller then waits
    for them the slow way)."""
    dialect = session.get_bind().dialect.name
    if dialect not in ("mysql", "postgresql"):
        return UNTRIED
    params = {"deployable": deployable_id, "arq": arq_id,
              "now": models.utcnow()}
    if dialect == "mysql":
        # NOTE(cyborg_lite): under READ COMMITTED, a row another
        # transaction holds is waited for and re-read: no SKIP LOCKED,
        # so finding none means none is free.
        result = session.execute(_TAKE_FIRST_MYSQL, params)
        return result.lastrowid if result.rowcount == 1 else None
    taken = session.execute(_TAKE_FIRST_PG, params).scalar_one_or_none()
    return UNTRIED if taken is None else taken


def take_free(session, deployable_id, arq_id, attempts=8):
    """Reserve one free attach handle of a deployable for an ARQ.

    On MySQL and PostgreSQL, one ``UPDATE`` takes the first free handle
    (the row locked, so two workers never take the same one). On sqlite,
    and on PostgreSQL when every free handle is held by a concurrent
    transaction (``SKIP LOCKED``), each try is one conditional ``UPDATE ...
    WHERE id = :id AND in_use = false`` on candidates read first: when two
    workers pick the same handle only one update matches, the other moves
    on to the next candidate.

    :returns: the id of the handle taken, or None when none is free.
    """
    taken = _take_first(session, deployable_id, arq_id)
    if taken is not UNTRIED:
        return taken
    return _take_candidate(session, deployable_id, arq_id, attempts)


def _take_candidate(session, deployable_id, arq_id, attempts=8):
    candidates = session.execute(
        _FREE, {"deployable": deployable_id, "attempts": attempts}
    ).scalars().all()
    for handle_id in candidates:
        result = session.execute(_TAKE, {
            "handle": handle_id, "arq": arq_id, "now": models.utcnow()})
        if result.rowcount == 1:
            return handle_id
    return None


_MOVING = {}

#: MySQL: the ARQ row and the first free handle no other transaction holds
#: changed together by one multi-table UPDATE, or neither.
# NOTE(cyborg_lite): without its own FOR UPDATE, the derived table's rows
# are read under shared locks (InnoDB's locking read of a multi-table
# UPDATE, also at READ COMMITTED), and two binds upgrading theirs on the
# same handle deadlock.
_MOVING_MYSQL = (
    "UPDATE arqs {joins}JOIN (SELECT id FROM attach_handles "
    "WHERE deployable_id = :deployable AND in_use = 0 AND retired = 0 "
    "ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) AS pick "
    "JOIN attach_handles ON attach_handles.id = pick.id "
    "SET {sets}, attach_handles.in_use = 1, attach_handles.arq_id = :arq, "
    "attach_handles.updated_at = :now "
    "WHERE arqs.id = :arq_id AND arqs.state IN :allowed "
    "AND attach_handles.in_use = 0{checks}")


_REGIONS = models.Deployable.__table__
_DEVICES = models.Device.__table__


def _region_checked(names):
    """PostgreSQL: the region ``:deployable`` under a shared lock on its
    row, when its columns ``names`` still hold ``:region_<name>``, it is
    live and its device enabled (else no row)."""
    return (sa.select(_REGIONS.c.id)
            .select_from(_REGIONS.join(
                _DEVICES, _DEVICES.c.id == _REGIONS.c.device_id))
            .where(_REGIONS.c.id == sa.bindparam("deployable"),
                   _REGIONS.c.retired.is_(False),
                   _DEVICES.c.status == "enabled",
                   *(_REGIONS.c[name].is_not_distinct_from(sa.bindparam(
                       f"region_{name}", type_=_REGIONS.c[name].type))
                     for name in names))
            .with_for_update(read=True, of=_REGIONS).cte("region"))


def _taken_after(before):
    """PostgreSQL: the CTE that takes the first free handle no other
    transaction holds, once the CTE ``before`` has a row (the handle's row
    is locked after what ``before`` locks)."""
    return _take_first_pg(sa.exists(sa.select(before.c.id))).cte("taken")


def _mysql_statement(columns, joins="", checks=""):
    """MySQL: :data:`_MOVING_MYSQL` setting the ARQ's ``columns`` from
    their ``:new_<column>`` parameters."""
    sets = ", ".join(f"arqs.{column} = :new_{column}" for column in columns)
    return sa.text(_MOVING_MYSQL.format(
        sets=sets, joins=joins, checks=checks)).bindparams(
            sa.bindparam("allowed", expanding=True))


def _moving_statement(dialect, move, allowed, columns):
    """The statement of :func:`take_free_moving` (one per shape of move,
    built once)."""
    key = (dialect, allowed, columns)
    stmt = _MOVING.get(key)
    if stmt is not None:
        return stmt
    if dialect == "postgresql":
        # NOTE(cyborg_lite): the sub-statements of a WITH run on one
        # snapshot; the handle is taken (its row locked last, as a bind in
        # several statements locks them) only when the ARQ row was moved.
        moved = move.returning(move.table.c.id).cte("moved")
        taken = _taken_after(moved)
        stmt = sa.select(
            sa.select(sa.func.count()).select_from(moved).scalar_subquery(),
            sa.select(taken.c.id).scalar_subquery())
    else:
        stmt = _mysql_statement(columns)
    _MOVING[key] = stmt
    return stmt


def _skips_locked(dialect):
    """Whether the database has ``SKIP LOCKED`` (PostgreSQL; MariaDB from
    10.6, MySQL from 8.0)."""
    if dialect.name == "postgresql":
        return True
    if dialect.name != "mysql":
        return False
    version = dialect.server_version_info or ()
    return version >= ((10, 6) if dialect.is_mariadb else (8, 0, 1))


def checks_region(session):
    """Whether a transaction's bind is best made by
    :func:`take_free_at_once` on a region read without a lock
    (PostgreSQL: on MySQL its locks come in another order than a
    programming start's)."""
    return session.get_bind().dialect.name == "postgresql"


def take_free_moving(session, move, params, deployable_id, arq_id):
    """Run a conditional ``UPDATE`` of one ARQ and take a free handle of
    ``deployable_id`` for that ARQ when it moved, in one statement.

    :param move: ``(statement, allowed states, columns set)`` of the
        UPDATE (:func:`cyborg_lite.arq_states.move`), ``params`` its
        parameters.
    :returns: ``(moved, taken)``, as booleans; :data:`UNTRIED` when
        nothing was done: on sqlite (and a MySQL without ``SKIP LOCKED``),
        and on MySQL when the statement matched nothing (the caller then
        runs the two statements, which tell why, and wait for the handles
        other transactions hold).
    """
    dialect = session.get_bind().dialect
    if not _skips_locked(dialect):
        return UNTRIED
    dialect = dialect.name
    statement, allowed, columns = move
    stmt = _moving_statement(dialect, statement, allowed, columns)
    params = dict(params, deployable=deployable_id, arq=arq_id,
                  now=models.utcnow())
    if dialect == "mysql":
        params["allowed"] = list(allowed)
        return (True, True) if session.execute(stmt, params).rowcount \
            else UNTRIED
    moved, taken = session.execute(stmt, params).one()
    if moved and taken is None:
        # NOTE(cyborg_lite): none free, or every free one held by another
        # transaction (SKIP LOCKED): wait for those the slow way.
        taken = _take_candidate(session, deployable_id, arq_id)
    return bool(moved), taken is not None


#: MySQL: for :func:`take_free_at_once`, :data:`_MOVING_MYSQL` also reads
#: the region and its device under shared locks (a multi-table UPDATE's
#: locking read) and checks them.
_REGION_JOINS_MYSQL = (
    "JOIN deployables ON deployables.id = :deployable "
    "JOIN devices ON devices.id = deployables.device_id ")

_AT_ONCE = {}


def _at_once_statement(dialect, move, allowed, columns, checked):
    key = (dialect, allowed, columns, checked)
    stmt = _AT_ONCE.get(key)
    if stmt is not None:
        return stmt
    if dialect == "postgresql":
        # NOTE(cyborg_lite): each step waits for the one before: the
        # region's shared lock, the ARQ's row (locked, its state checked
        # again), a handle, and only then the ARQ's move, which cannot
        # fail once its row is locked.
        region = _region_checked(checked)
        arqs = move.table
        locked = (sa.select(arqs.c.id)
                  .where(arqs.c.id == sa.bindparam("arq_id"),
                         arqs.c.state.in_(allowed),
                         sa.exists(sa.select(region.c.id)))
                  .with_for_update().cte("arq"))
        taken = _taken_after(locked)
        moved = (move.where(sa.exists(sa.select(taken.c.id)))
                 .returning(arqs.c.id).cte("moved"))
        stmt = sa.select(sa.select(sa.func.count()).select_from(moved)
                         .scalar_subquery())
    else:
        stmt = _mysql_statement(
            columns, joins=_REGION_JOINS_MYSQL,
            checks="".join(f" AND deployables.{name} <=> :region_{name}"
                           for name in checked)
            + " AND deployables.retired = 0 AND devices.status = 'enabled'")
    _AT_ONCE[key] = stmt
    return stmt


def binds_at_once(dialect):
    """Whether :func:`take_free_at_once` can run on this database."""
    return _skips_locked(dialect)


def take_free_at_once(session, move, params, deployable_id, arq_id, region):
    """:func:`take_free_moving` with ``region``, all or nothing: in one
    statement, the region's shared lock and its check, the ARQ moved and a
    handle taken for it, or nothing changed. Safe in autocommit.

    :returns: True when the ARQ moved and holds a handle; False when
        nothing changed (the region changed, the ARQ is not in a state it
        may move from, or no handle is free that no other transaction
        holds).
    """
    dialect = session.get_bind().dialect
    statement, allowed, columns = move
    checked = tuple(sorted(region))
    stmt = _at_once_statement(dialect.name, statement, allowed, columns,
                              checked)
    params = dict(params, deployable=deployable_id, arq=arq_id,
                  now=models.utcnow())
    params.update((f"region_{name}", value)
                  for name, value in region.items())
    if dialect.name == "mysql":
        params["allowed"] = list(allowed)
        return session.execute(stmt, params).rowcount == 2
    return session.execute(stmt, params).scalar_one() == 1


def release(session, arq_ids):
    """Free the attach handles held by ``arq_ids``; returns how many."""
    if not arq_ids:
        return 0
    result = session.execute(
        sa.update(models.AttachHandle)
        .where(models.AttachHandle.arq_id.in_(arq_ids))
        .values(in_use=False, arq_id=None, updated_at=models.utcnow())
        .execution_options(synchronize_session=False))
    return result.rowcount


def without_physical_network(session, deployable, device):
    """PCI addresses of a NIC region's live PCI handles that name no
    physical network (what Nova needs to plug the port); ``[]`` for a
    region of any other device."""
    if device.type != "NIC":
        return []
    return session.execute(
        sa.select(_H.pci_address)
        .where(_H.deployable_id == deployable.id, _H.retired.is_(False),
               _H.type != "MDEV", _H.physical_network.is_(None))
        .order_by(_H.id)).scalars().all()


def refuse_without_physical_network(session, arq_uuid, fields, deployable,
                                    device):
    """:raises NICHandleWithoutPhysnet: (409) when ``deployable`` is a NIC
    region with a handle that names no physical network: no ARQ is bound
    there, as Nova would fail to plug the port later."""
    missing = without_physical_network(session, deployable, device)
    if missing:
        raise exception.NICHandleWithoutPhysnet(
            arq=arq_uuid, deployable=deployable.uuid,
            rp_uuid=fields["device_rp_uuid"],
            handles=exception.some(missing))


def in_use_by_deployable(session):
    """``{deployable id: attach handles in use}`` (only those with one)."""
    return dict(session.execute(
        sa.select(models.AttachHandle.deployable_id,
                  sa.func.count(models.AttachHandle.id))
        .where(models.AttachHandle.in_use.is_(True))
        .group_by(models.AttachHandle.deployable_id)).all())


def in_use_counts(session, deployable_ids):
    """``{deployable id: attach handles in use}`` of these deployables
    (only those with one)."""
    if not deployable_ids:
        return {}
    return dict(session.execute(
        sa.select(models.AttachHandle.deployable_id,
                  sa.func.count(models.AttachHandle.id))
        .where(models.AttachHandle.deployable_id.in_(deployable_ids),
               models.AttachHandle.in_use.is_(True))
        .group_by(models.AttachHandle.deployable_id)).all())


def free_count(session, deployable_id):
    """How many live attach handles of a deployable are free."""
    return session.execute(
        sa.select(sa.func.count(_H.id)).where(
            _H.deployable_id == deployable_id, _H.in_use.is_(False),
            _H.retired.is_(False))).scalar_one()


def in_use_count(session, deployable_ids):
    """How many attach handles of these deployables are held by ARQs."""
    return session.execute(
        sa.select(sa.func.count(models.AttachHandle.id)).where(
            models.AttachHandle.deployable_id.in_(deployable_ids),
            models.AttachHandle.in_use.is_(True))).scalar_one()
