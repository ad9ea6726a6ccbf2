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

"""The bind's read and its one writer.

:func:`read` returns what a bind's decision needs (:class:`Facts`: the
ARQs of the PATCH with their device profile groups, the other ARQs of
their instances, and the region of each with its device);
:mod:`cyborg_lite.binding.plan` decides; :func:`write` applies the
:class:`Decision` list in the caller's transaction. Which statements do it
is this layer's business (:mod:`cyborg_lite.db.bind_statements`), and so is
whether a bind of one ARQ runs without a transaction (:func:`run`).
"""

import dataclasses
import enum

import sqlalchemy as sa
from sqlalchemy import orm

from cyborg_lite import arq_states
from cyborg_lite import exception
from cyborg_lite import states
from cyborg_lite.db import arqs as arq_db
from cyborg_lite.db import attach_handles as handle_db
from cyborg_lite.db import bind_statements
from cyborg_lite.db import deployables as deployable_db
from cyborg_lite.db import models


class Action(enum.Enum):
    """What the bind does with one ARQ."""

    #: Bind it now to a free handle of its region.
    BIND = "bind"
    #: Reserve a handle and wait for the programming run under way in its
    #: region (``BindStarted``).
    JOIN = "join"
    #: Take its region for programming, reserve a handle and wait
    #: (``BindStarted``); the run is launched after the commit.
    PROGRAM = "program"
    #: Nothing to do: it is bound (or binding) exactly so already.
    REPEAT = "repeat"
    #: Unbind it: an ARQ of the instance left from a build on another host
    #: (Nova rescheduled the instance).
    UNBIND = "unbind"
    #: Its region cannot serve it (or a sibling serves it already): move
    #: the instance's allocation to a sibling region and decide again.
    MOVE = "move"
    #: Its region was read without a lock and is not ready for an instant
    #: bind: read it again under its lock and decide again.
    RECHECK = "recheck"
    #: Refuse the PATCH (the decision's ``reason`` says why).
    REFUSE = "refuse"


#: what :func:`write` writes.
WRITES = (Action.UNBIND, Action.BIND, Action.JOIN, Action.PROGRAM)
#: decisions that stop the PATCH before anything is written.
STOPS = (Action.REFUSE, Action.MOVE, Action.RECHECK)


@dataclasses.dataclass(frozen=True)
class Region:
    """A region as the bind read it."""

    deployable: object
    device: object
    #: read under its shared lock: it stays so until the commit.
    locked: bool = False
    #: PCI addresses of a NIC region's handles without a physical network.
    without_physnet: tuple = ()


@dataclasses.dataclass(frozen=True)
class Facts:
    """What one :func:`read` returns."""

    #: {arq uuid: (arq, device profile group)} of the PATCH's ARQs found.
    arqs: dict
    #: {instance uuid: [arq]}: the other ARQs bound or binding to them.
    others: dict
    #: {arq uuid: :class:`Region` or None} of the bindable ARQs found.
    regions: dict


@dataclasses.dataclass(frozen=True)
class Decision:
    """One ARQ's decision (:mod:`cyborg_lite.binding.plan`)."""

    action: Action
    arq: object = None
    fields: dict = None
    #: the group as the region serves it (its keep applied).
    group: dict = None
    region: Region = None
    #: the lock trait of the content the bind gets.
    served: str = None
    #: REFUSE: the exception to raise; MOVE: why the region cannot serve.
    reason: Exception = None
    #: MOVE: the provider of a sibling that serves the group already.
    target: str = None
    #: the ARQ's uuid (still known once a rollback expired ``arq``).
    arq_uuid: str = None


@dataclasses.dataclass
class Written:
    """What :func:`write` did."""

    #: nothing was written: read again under locks (in a transaction).
    again: bool = False
    bound: list = dataclasses.field(default_factory=list)
    jobs: list = dataclasses.field(default_factory=list)
    touched: set = dataclasses.field(default_factory=set)


class Refused(Exception):
    """The database refused ``decision`` (``cause``, a conflict): raised
    to roll the transaction back; the plan decides what follows."""

    def __init__(self, decision, cause):
        super().__init__(cause)
        self.decision = decision
        self.cause = cause


def is_repeat(arq, fields):
    """Is this the bind ``arq`` already has (or is getting)?"""
    return arq.state in (arq_states.BOUND, arq_states.BIND_STARTED) and (
        arq.hostname, arq.device_rp_uuid, arq.instance_uuid) == (
        fields["hostname"], fields["device_rp_uuid"],
        fields["instance_uuid"])


def bound_elsewhere(arq, fields):
    """The refusal of an ARQ bound (or binding) to another instance."""
    return exception.ARQBadState(
        uuid=arq.uuid, state=arq.state,
        action=f"binding to instance {fields['instance_uuid']} "
               f"(it is bound to {arq.instance_uuid})",
        expected=", ".join(arq_states.BINDABLE))


def run(db, reserve, *args, single=False):
    """``reserve(session, *args, autocommit=...)`` (read, decide, write):
    with ``single`` (one ARQ, nothing else to write in its transaction),
    first in autocommit where one statement binds it
    (:attr:`.bind_statements.Strategy.at_once`), then, when that wrote
    nothing and answered None, in one transaction."""
    if single:
        done = db.autocommit(_at_once, reserve, args)
        if done is not None:
            return done
    return db.run(reserve, *args, autocommit=False)


def _at_once(session, reserve, args):
    if not bind_statements.strategy(session).at_once:
        return None
    return reserve(session, *args, autocommit=True)


_BOUND_ISH = (arq_states.BIND_STARTED, arq_states.BOUND)
_A, _D, _V = models.ARQ, models.Deployable, models.Device


def _in(column, name, single):
    if single:
        return column == sa.bindparam(name)
    return column.in_(sa.bindparam(name, expanding=True))


def _for_bind(scoped, single):
    """The ARQs of the PATCH and those bound to its instances, with their
    groups: only the columns a bind reads (any other is loaded when first
    used, in the same transaction): PyMySQL parses every column's
    description of every result in Python."""
    patched = _in(_A.uuid, "uuids", single)
    if scoped:
        patched = sa.and_(patched, _A.project_id == sa.bindparam("project"))
    of_instances = sa.and_(_in(_A.instance_uuid, "instances", single),
                           _A.state.in_(_BOUND_ISH))
    return (sa.select(_A, models.DeviceProfile.groups)
            .join(models.DeviceProfile,
                  _A.device_profile_id == models.DeviceProfile.id)
            .where(sa.or_(patched, of_instances))
            .options(orm.load_only(
                _A.id, _A.uuid, _A.state, _A.project_id, _A.hostname,
                _A.device_rp_uuid, _A.instance_uuid,
                _A.device_profile_group_id)))


#: {(scoped, one ARQ and one instance): statement}
_FOR_BIND = {(scoped, single): _for_bind(scoped, single)
             for scoped in (False, True) for single in (False, True)}


def _for_bind_with_region(scoped):
    """:func:`_for_bind` of one ARQ, with the region and device of the
    resource provider ``:rp`` beside the PATCH's ARQ (read without a
    lock)."""
    # NOTE(cyborg_lite): the region's provider compared with an expression
    # of the ARQ's row (":rp" beside the PATCH's ARQ, NULL beside the
    # others): the ON clause links the two tables, which SQLAlchemy's
    # linter of the MySQL dialect needs to see no cartesian product.
    beside = sa.case((_A.uuid == sa.bindparam("uuids"),
                      sa.bindparam("rp")))
    return (_for_bind(scoped, True)
            .add_columns(_D, _V)
            .outerjoin(_D, sa.and_(_D.rp_uuid == beside,
                                   _D.retired.is_(False)))
            .outerjoin(_V, _V.id == _D.device_id)
            .options(*deployable_db.BIND_COLUMNS))


_FOR_BIND_WITH_REGION = {scoped: _for_bind_with_region(scoped)
                         for scoped in (False, True)}


def _found_and_others(rows, wanted, project_id):
    found = {row[0].uuid: (row[0], row[1][row[0].device_profile_group_id])
             for row in rows if row[0].uuid in wanted and (
                 project_id is None or row[0].project_id == project_id)}
    found_ids = {arq.id for arq, _ in found.values()}
    others = {}
    for arq, *_ in rows:
        if arq.id not in found_ids:  # NOTE(cyborg_lite): of the instances
            others.setdefault(arq.instance_uuid, []).append(arq)
    return found, others, rows


def _arqs(session, uuids, instances, project_id):
    single = len(uuids) == len(instances) == 1
    rows = session.execute(
        _FOR_BIND[project_id is not None, single],
        {"uuids": uuids[0] if single else uuids,
         "instances": instances[0] if single else instances,
         "project": project_id}).all()
    return _found_and_others(rows, set(uuids), project_id)


def _region(session, deployable, device, locked):
    if deployable is None:
        return None
    return Region(deployable, device, locked, tuple(
        handle_db.without_physical_network(session, deployable, device)))


def read(session, binds, project_id=None, locked=False, autocommit=False):
    """What the decision on ``binds`` needs, read in the caller's session.

    The region of an ARQ whose group asks for no function is read under
    its shared lock (the bind is instant, or joins a run); any other
    without one (it is checked as it is written), unless ``locked``. A
    bind of one ARQ may read its region in the same statement as the ARQ.

    :param binds: {arq uuid: {hostname, device_rp_uuid, instance_uuid}}.
    :param project_id: only the caller's ARQs count as found (None: any).
    :returns: :class:`Facts`.
    """
    if len(binds) == 1 and not locked and (
            autocommit or bind_statements.strategy(session).checks_region):
        ((arq_uuid, fields),) = binds.items()
        rows = session.execute(
            _FOR_BIND_WITH_REGION[project_id is not None],
            {"uuids": arq_uuid, "instances": fields["instance_uuid"],
             "project": project_id, "rp": fields["device_rp_uuid"]}).all()
        found, others, rows = _found_and_others(rows, {arq_uuid}, project_id)
        regions = {row[0].uuid: _region(session, *row[2:], locked=False)
                   for row in rows if row[0].uuid in found}
        return Facts(found, others, regions)
    found, others, _ = _arqs(
        session, list(binds),
        sorted({f["instance_uuid"] for f in binds.values()}), project_id)
    regions = {}
    for arq_uuid, (arq, group) in found.items():
        if arq.state not in arq_states.BINDABLE:
            continue
        lock = locked or not deployable_db.asks_content(group)
        deployable, device = deployable_db.with_device_by_rp(
            session, binds[arq_uuid]["device_rp_uuid"], lock_shared=lock)
        regions[arq_uuid] = _region(session, deployable, device, lock)
    return Facts(found, others, regions)


def serving_sibling(session, decision, asked, avoid):
    """The provider of a sibling of ``decision``'s region that runs (or is
    being programmed with) ``asked`` (``(function_id, bitstream_id)``) and
    has a free handle, or None."""
    region = decision.region
    return deployable_db.serving_sibling(
        session, region.deployable, region.device.hostname, *asked,
        avoid=avoid)


_PENDING = states.Notification.PENDING.value
_READ_AHEAD = ("state", "function_id", "bitstream_id", "device_id",
               "assigned_function_id", "assigned_bitstream_id",
               "assigned_until")


def _as_read(deployable):
    """``{column: value}`` of what the decision read of ``deployable``."""
    return {name: getattr(deployable, name) for name in _READ_AHEAD}


def write(session, decisions, notify, start=None, autocommit=False):
    """Apply the decisions, in the caller's transaction.

    Instant binds on a region read without its lock are checked first:
    when one changed since it was read, nothing is written. Where the
    only write is such a bind, one statement takes the lock, checks and
    binds; in ``autocommit`` that is the only write allowed.

    :param notify: mark new binds for a Nova event.
    :param start: ``start(session, arq, deployable, group)`` takes the
        region for programming and reserves a handle; a job or None.
    :raises Refused: a write the database refused (the caller's
        transaction rolls back).
    :returns: :class:`Written`.
    """
    writes = [d for d in decisions if d.action in WRITES]
    checked = (len(writes) == 1 and writes[0].action is Action.BIND
               and not writes[0].region.locked)
    if autocommit and writes and not checked:
        return Written(again=True)
    plan = bind_statements.strategy(session)
    at_once = checked and (autocommit or plan.checks_region)
    for decision in writes:
        if (decision.action is Action.BIND and not decision.region.locked
                and not at_once):
            deployable = decision.region.deployable
            read = _as_read(deployable)
            if _as_read(deployable_db.lock_shared(
                    session, deployable.id)) != read:
                return Written(again=True)
    written = Written()
    for decision in writes:
        try:
            if not _write(session, decision, notify, start, at_once,
                          written):
                return Written(again=True)
        except exception.Conflict as cause:
            raise Refused(decision, cause)
    return written


def _write(session, decision, notify, start, at_once, written):
    arq, fields = decision.arq, decision.fields
    if decision.action is Action.UNBIND:
        unbind_rows(session, [arq])
        if arq.deployable_id:
            written.touched.add(arq.deployable_id)
        return True
    deployable = decision.region.deployable
    written.touched.add(deployable.id)
    if decision.action is Action.BIND:
        values = dict(fields, deployable_id=deployable.id,
                      notification=_PENDING if notify else None)
        if at_once:
            if not bind_statements.bind_at_once(
                    session, arq, deployable.id, _as_read(deployable),
                    **values):
                return False
            written.bound.append(arq.uuid)
            return True
        moved, taken = bind_statements.bind_taking_handle(
            session, arq, deployable.id, **values)
        if not moved:
            if is_repeat(arq, fields):
                return True
            raise bound_elsewhere(arq, fields)
        if not taken:
            raise exception.NoFreeAttachHandle(
                deployable=deployable.uuid, rp_uuid=fields["device_rp_uuid"],
                arq=arq.uuid)
        written.bound.append(arq.uuid)
        return True
    arq_db.move(session, arq, arq_states.BIND_STARTED, **fields)
    if decision.action is Action.JOIN:
        hold(session, arq, deployable)
        return True
    # NOTE(cyborg_lite): the programmer takes over from BindStarted:
    # region taken, handle reserved; Bound or BindFailed come later.
    job = start(session, arq, deployable, decision.group)
    if job is not None:
        written.jobs.append(job)
    return True


def hold(session, arq, deployable):
    """Reserve a free attach handle of ``deployable`` for ``arq``
    (``BindStarted``), which then waits for the region's programming run.

    :raises NoFreeAttachHandle:
    """
    if handle_db.take_free(session, deployable.id, arq.id) is None:
        raise exception.NoFreeAttachHandle(
            deployable=deployable.uuid, rp_uuid=deployable.rp_uuid,
            arq=arq.uuid)
    arq_db.set_deployable(session, arq.id, deployable.id)


def unbind_rows(session, arqs):
    """Free the handles of ``arqs`` and move them to ``Unbound``."""
    handle_db.release(session, [arq.id for arq in arqs])
    for arq in arqs:
        arq_db.move(session, arq, arq_states.UNBOUND, hostname=None,
                    device_rp_uuid=None, instance_uuid=None,
                    deployable_id=None, notification=None)


def unbind(session, arq_uuids):
    """:func:`unbind_rows` of the ARQs with these uuids."""
    unbind_rows(session, arq_db.get_all(session, uuids=arq_uuids))


def fail(session, binds, project_id):
    """Mark the PATCH's bindable ARQs ``BindFailed``.

    :returns: ``[(arq uuid, group)]`` of those this call failed.
    """
    found, _, _ = _arqs(session, list(binds), [], project_id)
    failed = []
    for arq_uuid, (arq, group) in found.items():
        if arq.state in arq_states.BINDABLE:
            arq_db.move(session, arq, arq_states.BIND_FAILED,
                        notification=None, **binds[arq_uuid])
            failed.append((arq_uuid, group))
    return failed
