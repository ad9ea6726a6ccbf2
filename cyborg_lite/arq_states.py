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

"""The ARQ state machine (CONTRACT.md §2), in one place.

Every change of state is one conditional ``UPDATE arqs ... WHERE id = :id AND
state IN (<allowed predecessors>)``: the database row is the lock, so two API
workers (or two hosts) can never both move the same ARQ. Each step is
idempotent: asking for the state an ARQ is already in succeeds and changes
nothing.
"""

import sqlalchemy as sa
from sqlalchemy.orm import attributes

from cyborg_lite import exception
from cyborg_lite.db import attach_handles as handle_db
from cyborg_lite.db import models

INITIAL = "Initial"
BIND_STARTED = "BindStarted"
BOUND = "Bound"
UNBOUND = "Unbound"
BIND_FAILED = "BindFailed"
UNBIND_FAILED = "UnbindFailed"
DELETING = "Deleting"

ALL = (INITIAL, BIND_STARTED, BOUND, UNBOUND, BIND_FAILED, UNBIND_FAILED,
       DELETING)

#: target state -> the states it may be entered from.
TRANSITIONS = {
    BIND_STARTED: (INITIAL, UNBOUND),
    BOUND: (BIND_STARTED,),
    # NOTE(cyborg_lite): a PATCH that fails while reserving rolls back its
    # BindStarted, so the ARQ is failed from the state it started in.
    BIND_FAILED: (BIND_STARTED, BOUND, INITIAL, UNBOUND),
    UNBOUND: (INITIAL, BIND_STARTED, BOUND, BIND_FAILED, UNBIND_FAILED),
    UNBIND_FAILED: (BIND_STARTED, BOUND, BIND_FAILED),
    DELETING: ALL,
}

#: states a bind may start from.
BINDABLE = TRANSITIONS[BIND_STARTED]

#: states Nova treats as "resolved" (GET ?bind_state=resolved).
RESOLVED = (BOUND, BIND_FAILED, DELETING)

#: ARQ state -> status of the accelerator-request-bound event.
NOVA_EVENT_STATUS = {BOUND: "completed", BIND_FAILED: "failed",
                     DELETING: "failed"}


def can_move(current, target):
    """True when an ARQ in ``current`` may move to ``target``."""
    return current == target or current in TRANSITIONS[target]


_MOVES = {}


def _move_statement(allowed, columns):
    """``UPDATE arqs SET <columns> WHERE id = :arq_id AND state IN
    <allowed>``, built once per shape (a handful exist)."""
    stmt = _MOVES.get((allowed, columns))
    if stmt is None:
        # NOTE(cyborg_lite): on the table, not the ORM class: the caller's
        # object is kept in step below, without ORM-enabled UPDATE costs.
        table = models.ARQ.__table__
        stmt = (sa.update(table)
                .where(table.c.id == sa.bindparam("arq_id"),
                       table.c.state.in_(allowed))
                .values({column: sa.bindparam(f"new_{column}")
                         for column in columns}))
        _MOVES[(allowed, columns)] = stmt
    return stmt


def move(session, arq, target, via=None, **values):
    """Move ``arq`` to ``target`` with one conditional UPDATE.

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
    allowed, stmt, params, values = _move(arq, target, via, values)
    if session.execute(stmt, params).rowcount == 1:
        _moved(arq, values)
        return True
    return _not_moved(session, arq, target, allowed)


def _move(arq, target, via, values):
    """``(allowed states, statement, parameters, values set)`` of a
    :func:`move`."""
    allowed = TRANSITIONS[target if via is None else via]
    values = dict(values, state=target, updated_at=models.utcnow())
    stmt = _move_statement(allowed, tuple(sorted(values)))
    params = {f"new_{key}": value for key, value in values.items()}
    params["arq_id"] = arq.id
    return allowed, stmt, params, values


def _moved(arq, values):
    # NOTE(cyborg_lite): the row now holds exactly these values; keep the
    # object in step without another SELECT.
    for key, value in values.items():
        attributes.set_committed_value(arq, key, value)


def _not_moved(session, arq, target, allowed):
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


def move_taking_handle(session, arq, target, handle_of, via=None,
                       **values):
    """:func:`move` ``arq`` and take a free attach handle of the
    deployable whose id is ``handle_of`` for it
    (:func:`.attach_handles.take_free`), in one statement where the
    database allows it: one round trip less for each instant bind.

    :returns: ``(moved, taken)``: ``moved`` as :func:`move` answers;
        ``taken`` whether a handle was taken (False when none is free; the
        caller's transaction must then roll the move back).
    :raises ARQBadState: as :func:`move`.
    """
    allowed, stmt, params, values = _move(arq, target, via, values)
    outcome = handle_db.take_free_moving(
        session, (stmt, allowed, tuple(sorted(values))), params, handle_of,
        arq.id)
    if outcome is handle_db.UNTRIED:
        moved = move(session, arq, target, via=via, **values)
        return moved, moved and handle_db.take_free(
            session, handle_of, arq.id) is not None
    moved, taken = outcome
    if not moved:
        return _not_moved(session, arq, target, allowed), False
    _moved(arq, values)
    return True, taken


def move_at_once(session, arq, target, handle_of, region, via=None,
                 **values):
    """:func:`move_taking_handle`, all or nothing, the deployable's shared
    lock taken and its ``region`` values (as read without a lock) checked
    in the same statement (:func:`.attach_handles.take_free_at_once`):
    safe in autocommit.

    :returns: True when ``arq`` moved and holds a handle, False when
        nothing changed.
    """
    allowed, stmt, params, values = _move(arq, target, via, values)
    done = handle_db.take_free_at_once(
        session, (stmt, allowed, tuple(sorted(values))), params, handle_of,
        arq.id, region)
    if done:
        _moved(arq, values)
    return done
