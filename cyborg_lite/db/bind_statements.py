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

"""The statement shapes of an instant bind: a private strategy of the
bind's writer (:mod:`cyborg_lite.db.binds`), chosen once per engine.

An instant bind moves one ARQ to ``Bound`` and takes a free attach handle
of its region for it. Where the database allows, both happen in one
statement (a PostgreSQL writable CTE, a MySQL multi-table UPDATE); sqlite
(and a MySQL without ``SKIP LOCKED``) runs two. With the region's values as
read without a lock, the same statement can also take the region's shared
lock and check that it still holds them (PostgreSQL, and MariaDB from
10.6): then a bind of one ARQ needs no transaction at all.
"""

import dataclasses
import weakref

import sqlalchemy as sa

from cyborg_lite import arq_states
from cyborg_lite import states
from cyborg_lite.db import arqs as arq_db
from cyborg_lite.db import attach_handles as handle_db
from cyborg_lite.db import models


@dataclasses.dataclass(frozen=True)
class Strategy:
    """What an engine's database can do for a bind."""

    #: one statement moves the ARQ and takes a handle (``SKIP LOCKED``).
    one_statement: bool
    #: one statement also takes the region's shared lock and checks it, so
    #: a bind of one ARQ runs in autocommit.
    at_once: bool
    #: a transaction's bind is best made on a region read without a lock,
    #: checked as it writes (PostgreSQL: on MySQL the locks come in another
    #: order than a programming start's).
    checks_region: bool


_STRATEGIES = weakref.WeakKeyDictionary()


def strategy(session):
    """The :class:`Strategy` of the engine ``session`` runs on."""
    engine = session.get_bind()
    chosen = _STRATEGIES.get(engine)
    if chosen is None:
        skips = _skips_locked(engine.dialect)
        chosen = _STRATEGIES[engine] = Strategy(
            one_statement=skips, at_once=skips,
            checks_region=engine.dialect.name == "postgresql")
    return chosen


def _skips_locked(dialect):
    """Whether the database has ``SKIP LOCKED`` (PostgreSQL; MariaDB from
    10.6, MySQL from 8.0)."""
    if dialect.name == "postgresql":
        return True
    if dialect.name != "mysql":
        return False
    version = dialect.server_version_info or ()
    return version >= ((10, 6) if dialect.is_mariadb else (8, 0, 1))


_TABLE = models.AttachHandle.__table__
_REGIONS = models.Deployable.__table__
_DEVICES = models.Device.__table__

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

#: MySQL: for :func:`bind_at_once`, :data:`_MOVING_MYSQL` also reads the
#: region and its device under shared locks (a multi-table UPDATE's
#: locking read) and checks them.
_REGION_JOINS_MYSQL = (
    "JOIN deployables ON deployables.id = :deployable "
    "JOIN devices ON devices.id = deployables.device_id ")


def _region_checked(names):
    """PostgreSQL: the region ``:deployable`` under a shared lock on its
    row, when its columns ``names`` still hold ``:region_<name>``, it is
    live and its device enabled (else no row)."""
    return (sa.select(_REGIONS.c.id)
            .select_from(_REGIONS.join(
                _DEVICES, _DEVICES.c.id == _REGIONS.c.device_id))
            .where(_REGIONS.c.id == sa.bindparam("deployable"),
                   _REGIONS.c.retired.is_(False),
                   _DEVICES.c.status == states.DeviceStatus.ENABLED.value,
                   *(_REGIONS.c[name].is_not_distinct_from(sa.bindparam(
                       f"region_{name}", type_=_REGIONS.c[name].type))
                     for name in names))
            .with_for_update(read=True, of=_REGIONS).cte("region"))


def _taken_after(before):
    """PostgreSQL: the CTE that takes the first free handle no other
    transaction holds, once the CTE ``before`` has a row (the handle's row
    is locked after what ``before`` locks)."""
    return handle_db.take_first_pg(sa.exists(sa.select(before.c.id))).cte(
        "taken")


def _mysql_statement(columns, joins="", checks=""):
    """MySQL: :data:`_MOVING_MYSQL` setting the ARQ's ``columns`` from
    their ``:new_<column>`` parameters."""
    sets = ", ".join(f"arqs.{column} = :new_{column}" for column in columns)
    return sa.text(_MOVING_MYSQL.format(
        sets=sets, joins=joins, checks=checks)).bindparams(
            sa.bindparam("allowed", expanding=True))


_MOVING = {}


def _moving_statement(dialect, move, allowed, columns):
    """The statement of :func:`bind_taking_handle` (one per shape of move,
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
        enabled = states.DeviceStatus.ENABLED.value
        stmt = _mysql_statement(
            columns, joins=_REGION_JOINS_MYSQL,
            checks="".join(f" AND deployables.{name} <=> :region_{name}"
                           for name in checked)
            + f" AND deployables.retired = 0 AND devices.status = "
              f"'{enabled}'")
    _AT_ONCE[key] = stmt
    return stmt


def _bound(arq, values):
    """``arq_db.move_parts`` of an instant bind: straight to ``Bound``,
    through ``BindStarted`` in the same UPDATE."""
    return arq_db.move_parts(arq, arq_states.BOUND, arq_states.BIND_STARTED,
                             values)


def bind_taking_handle(session, arq, handle_of, **values):
    """Move ``arq`` to ``Bound`` and take a free attach handle of the
    region whose id is ``handle_of`` for it, in one statement where the
    database allows it (else two).

    :returns: ``(moved, taken)``: ``moved`` as :func:`.arqs.move` answers
        (False: it is ``Bound`` already); ``taken`` whether a handle was
        taken (False when none is free: the transaction must then roll the
        move back).
    :raises ARQBadState: as :func:`.arqs.move`.
    """
    allowed, stmt, params, values = _bound(arq, values)
    outcome = None
    if strategy(session).one_statement:
        outcome = _moving(session, (stmt, allowed, tuple(sorted(values))),
                          params, handle_of, arq.id)
    if outcome is None:
        moved = arq_db.move(session, arq, arq_states.BOUND,
                            via=arq_states.BIND_STARTED, **values)
        return moved, moved and handle_db.take_free(
            session, handle_of, arq.id) is not None
    moved, taken = outcome
    if not moved:
        return arq_db.not_moved(session, arq, arq_states.BOUND,
                                allowed), False
    arq_db.moved(arq, values)
    return True, taken


def _moving(session, move, params, deployable_id, arq_id):
    """Run the ARQ's conditional UPDATE and take a handle of
    ``deployable_id`` when it moved, in one statement: ``(moved, taken)``,
    or None when nothing was done (on MySQL, when the statement matched
    nothing: the two statements then tell why, and wait for the handles
    other transactions hold)."""
    dialect = session.get_bind().dialect.name
    statement, allowed, columns = move
    stmt = _moving_statement(dialect, statement, allowed, columns)
    params = dict(params, deployable=deployable_id, arq=arq_id,
                  now=models.utcnow())
    if dialect == "mysql":
        params["allowed"] = list(allowed)
        return (True, True) if session.execute(stmt, params).rowcount \
            else None
    moved, taken = session.execute(stmt, params).one()
    if moved and taken is None:
        # NOTE(cyborg_lite): none free, or every free one held by another
        # transaction (SKIP LOCKED): wait for those the slow way.
        taken = handle_db.take_candidate(session, deployable_id, arq_id)
    return bool(moved), taken is not None


def bind_at_once(session, arq, handle_of, region, **values):
    """:func:`bind_taking_handle`, all or nothing, the region's shared lock
    taken and its ``region`` values (``{column: value}`` as read without a
    lock) checked in the same statement: safe in autocommit. Only where
    :attr:`Strategy.at_once`.

    :returns: True when ``arq`` is ``Bound`` and holds a handle; False when
        nothing changed (the region changed, the ARQ is not in a state it
        may move from, or no handle is free that no other transaction
        holds).
    """
    allowed, stmt, params, values = _bound(arq, values)
    dialect = session.get_bind().dialect.name
    checked = tuple(sorted(region))
    stmt = _at_once_statement(dialect, stmt, allowed, tuple(sorted(values)),
                              checked)
    params = dict(params, deployable=handle_of, arq=arq.id,
                  now=models.utcnow())
    params.update((f"region_{name}", value)
                  for name, value in region.items())
    if dialect == "mysql":
        params["allowed"] = list(allowed)
        done = session.execute(stmt, params).rowcount == 2
    else:
        done = session.execute(stmt, params).scalar_one() == 1
    if done:
        arq_db.moved(arq, values)
    return done
