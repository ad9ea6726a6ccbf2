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

"""The region (deployable) state machine, in one place.

``ready`` -> ``programming`` -> ``ready`` (function confirmed) or ``error``.
Every change is one conditional ``UPDATE deployables ... WHERE state IN
(...)``: the row is the lock, so two API workers never both program a
region. A row in ``programming`` carries its owner (one API process) and a
lease (``heartbeat_at``) the owner renews; only the owner may finish it, and
only once the lease went stale may the reconciler take it over.

Binds that need no programming take a *shared* lock on the region's row
(:func:`cyborg_lite.db.deployables.lock_shared`) before reserving a handle,
while starting to program takes the row exclusively (:func:`begin`) and
then checks that no handle is in use: whichever commits first wins, the
other sees it.
"""

import datetime
import enum

import sqlalchemy as sa
from sqlalchemy.orm import attributes

from cyborg_lite import arq_states
from cyborg_lite import states
from cyborg_lite.db import models

READY = states.RegionState.READY
PROGRAMMING = states.RegionState.PROGRAMMING
ERROR = states.RegionState.ERROR

#: How the ``last_error`` of a ``ready`` region starts when the Placement
#: update after its programming failed
#: (:func:`~cyborg_lite.programming.reconciler.retry_placement` retries it).
PLACEMENT_FAILED = "Placement:"

#: states an operator's program or reset may start from.
ADMIN_STARTABLE = (READY, ERROR)

_D = models.Deployable


def _set_loaded(row, values):
    for key, value in values.items():
        attributes.set_committed_value(row, key, value)


def target_text(function_id=None, bitstream_id=None):
    """Human form of a programming target, for messages."""
    if function_id:
        return f"accel:function_id={function_id}"
    if bitstream_id:
        return f"accel:bitstream_id={bitstream_id}"
    return "a reset (no function)"


def running_text(deployable):
    """What a region runs, for messages."""
    return (deployable.function_id or deployable.bitstream_id
            or "no function")


def unit_of(session, deployable, device):
    """The regions that are programmed together: the region itself on a
    ``dynamic`` device, every live region of a ``single`` device."""
    if device.program_mode != "single":
        return [deployable]
    return list(session.execute(
        sa.select(_D).where(_D.device_id == device.id,
                            _D.retired.is_(False))
        .order_by(_D.id)).scalars())


def begin(session, deployables, owner, function_id=None, bitstream_id=None,
          allowed=(READY,)):
    """Move regions to ``programming`` for ``owner``, all or none.

    :returns: None when every row moved, else the first region that did
        not (re-read: its state says why).
    """
    now = models.utcnow()
    values = {"state": PROGRAMMING, "target_function_id": function_id,
              "target_bitstream_id": bitstream_id,
              "programming_owner": owner, "heartbeat_at": now,
              "function_id": None, "bitstream_id": None,
              "last_error": None, "relaunches": 0, "updated_at": now}
    for deployable in sorted(deployables, key=lambda d: d.id):
        result = session.execute(
            sa.update(_D).where(_D.id == deployable.id,
                                _D.state.in_(allowed),
                                _D.retired.is_(False))
            .values(**values)
            .execution_options(synchronize_session=False))
        if result.rowcount != 1:
            session.refresh(deployable)
            return deployable
        _set_loaded(deployable, values)
    return None


class Seen(enum.Enum):
    """What :func:`note_placement` expects of ``last_error``, beyond a
    value."""

    #: Any earlier ``last_error`` will do.
    ANY = "any"


#: :func:`note_placement`'s ``seen`` when any earlier ``last_error`` will do.
ANY_ERROR = Seen.ANY


def note_placement(session, deployable_id, function_id, error,
                   seen=ANY_ERROR):
    """Record the outcome (``error`` or None) of a Placement update made
    for a region, if it is still ``ready`` with ``function_id`` (and its
    ``last_error`` still is ``seen``, unless that is :data:`ANY_ERROR`).

    :returns: True when the row was still so.
    """
    where = [_D.id == deployable_id, _D.state == READY,
             _D.function_id.is_not_distinct_from(function_id)]
    if seen is not ANY_ERROR:
        where.append(_D.last_error.is_not_distinct_from(seen))
    return session.execute(
        sa.update(_D).where(*where).values(last_error=error)
        .execution_options(synchronize_session=False)).rowcount == 1


def waiting_arqs(session, deployable_ids):
    """ARQs in ``BindStarted`` waiting for these regions' programming."""
    return list(session.execute(
        sa.select(models.ARQ).where(
            models.ARQ.state == arq_states.BIND_STARTED,
            models.ARQ.deployable_id.in_(deployable_ids))
        .order_by(models.ARQ.id)).scalars())


def finish(session, deployable_ids, owner, function_id, bitstream_id):
    """``programming`` -> ``ready`` with the confirmed function.

    :returns: how many rows this owner finished (0: its lease was taken).
    """
    return session.execute(
        sa.update(_D).where(_D.id.in_(deployable_ids),
                            _D.state == PROGRAMMING,
                            _D.programming_owner == owner)
        .values(state=READY, function_id=function_id,
                bitstream_id=bitstream_id, target_function_id=None,
                target_bitstream_id=None, programming_owner=None,
                heartbeat_at=None, last_error=None,
                updated_at=models.utcnow())
        .execution_options(synchronize_session=False)).rowcount


def fail(session, deployable_ids, owner, reason):
    """``programming`` -> ``error``: the region's content is unknown.

    :returns: how many rows this owner failed (0: its lease was taken).
    """
    return session.execute(
        sa.update(_D).where(_D.id.in_(deployable_ids),
                            _D.state == PROGRAMMING,
                            _D.programming_owner == owner)
        .values(state=ERROR, function_id=None, bitstream_id=None,
                target_function_id=None, target_bitstream_id=None,
                programming_owner=None, heartbeat_at=None,
                last_error=str(reason)[:4000],
                updated_at=models.utcnow())
        .execution_options(synchronize_session=False)).rowcount


def abandon(session, previous, owner, reason):
    """``programming`` -> ``ready`` with the content the regions had, for
    a run that never reached the agent.

    :param previous: ``{region id: (function_id, bitstream_id)}``.
    :returns: how many rows this owner gave back (0: its lease was taken).
    """
    moved = 0
    for deployable_id, (function_id, bitstream_id) in sorted(
            previous.items()):
        moved += session.execute(
            sa.update(_D).where(_D.id == deployable_id,
                                _D.state == PROGRAMMING,
                                _D.programming_owner == owner)
            .values(state=READY, function_id=function_id,
                    bitstream_id=bitstream_id, target_function_id=None,
                    target_bitstream_id=None, programming_owner=None,
                    heartbeat_at=None, last_error=str(reason)[:4000],
                    updated_at=models.utcnow())
            .execution_options(synchronize_session=False)).rowcount
    return moved


def renew(session, deployable_ids, owner):
    """Renew ``owner``'s lease on the regions it is programming."""
    if not deployable_ids:
        return 0
    return session.execute(
        sa.update(_D).where(_D.id.in_(deployable_ids),
                            _D.state == PROGRAMMING,
                            _D.programming_owner == owner)
        .values(heartbeat_at=models.utcnow())
        .execution_options(synchronize_session=False)).rowcount


def stale(session, stale_after):
    """Regions in ``programming`` whose lease is older than
    ``stale_after`` seconds (their owner is gone)."""
    cutoff = models.utcnow() - datetime.timedelta(seconds=stale_after)
    return list(session.execute(
        sa.select(_D).where(_D.state == PROGRAMMING,
                            sa.or_(_D.heartbeat_at.is_(None),
                                   _D.heartbeat_at < cutoff))
        .order_by(_D.id)).scalars())


def take_over(session, deployable_id, owner, stale_after):
    """Take a stale programming run over (one worker wins).

    :returns: True when this ``owner`` now holds the lease.
    """
    cutoff = models.utcnow() - datetime.timedelta(seconds=stale_after)
    return session.execute(
        sa.update(_D).where(_D.id == deployable_id,
                            _D.state == PROGRAMMING,
                            sa.or_(_D.heartbeat_at.is_(None),
                                   _D.heartbeat_at < cutoff))
        .values(programming_owner=owner, heartbeat_at=models.utcnow())
        .execution_options(synchronize_session=False)).rowcount == 1


def recover(session, deployable_id, function_id):
    """``error`` -> ``ready`` once the agent reads the region as healthy.

    :returns: True when this call moved the row.
    """
    return session.execute(
        sa.update(_D).where(_D.id == deployable_id, _D.state == ERROR)
        .values(state=READY, function_id=function_id, bitstream_id=None,
                last_error=None, updated_at=models.utcnow())
        .execution_options(synchronize_session=False)).rowcount == 1


def note_error(session, deployable_id, detail):
    """Record the agent's latest word on a region in ``error``."""
    session.execute(
        sa.update(_D).where(_D.id == deployable_id, _D.state == ERROR,
                            sa.or_(_D.last_error.is_(None),
                                   _D.last_error != detail))
        .values(last_error=str(detail)[:4000])
        .execution_options(synchronize_session=False))


def in_state(session, state, error_prefix=None):
    """Live regions in ``state`` (whose ``last_error`` starts with
    ``error_prefix``, when given), by id."""
    where = [_D.state == state, _D.retired.is_(False)]
    if error_prefix is not None:
        where.append(_D.last_error.startswith(error_prefix))
    return list(session.execute(
        sa.select(_D).where(*where).order_by(_D.id)).scalars())


def orphaned_arqs(session, stale_after):
    """ARQs in ``BindStarted`` for longer than ``stale_after`` seconds that
    no programming run waits for any more."""
    cutoff = models.utcnow() - datetime.timedelta(seconds=stale_after)
    programming = sa.select(_D.id).where(_D.state == PROGRAMMING)
    return list(session.execute(
        sa.select(models.ARQ).where(
            models.ARQ.state == arq_states.BIND_STARTED,
            sa.or_(models.ARQ.updated_at.is_(None),
                   models.ARQ.updated_at < cutoff),
            sa.or_(models.ARQ.deployable_id.is_(None),
                   models.ARQ.deployable_id.not_in(programming))))
        .scalars())
