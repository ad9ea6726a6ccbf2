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


"""Bind, unbind and delete accelerator requests (the hot path).

A bind PATCH is all-or-nothing: every ARQ of it is reserved in one
transaction (one conditional UPDATE per ARQ and per attach handle); any
failure rolls the whole reservation back and then marks the PATCH's ARQs
``BindFailed`` in a second transaction, so Nova's ``GET ?instance=`` sees a
resolved state, never a ``BindStarted`` left behind.

An ARQ whose region must first be programmed stays ``BindStarted`` after the
PATCH (its handle reserved, the region ``programming``); the programmer
resolves it in the background (:mod:`cyborg_lite.programming`). So does an
ARQ that asks for no function and finds its region being programmed: it
joins the run, whatever it loads.

Nova 34 does not reschedule a failed bind (a 409 puts the server in ERROR),
so the bind does what it can before refusing: when the region Nova
allocated cannot serve the group (another boot locked or took it since it
was scheduled), the instance's allocation is moved to a region of the same
host that can (:mod:`cyborg_lite.scheduling.siblings`); and what would
only fail later on the host (no image for the function) is asked of the
agent before the PATCH is answered. After the commit, the lock traits of
the regions touched are written (:mod:`cyborg_lite.scheduling.locks`).
"""

import uuid as uuidlib

from oslo_log import log as logging

from accel_common import inventory
from cyborg_lite import arq_states as states
from cyborg_lite import exception
from cyborg_lite.db import arqs as arq_db
from cyborg_lite.db import attach_handles as handle_db
from cyborg_lite.db import deployables as deployable_db
from cyborg_lite.programming import exception as prog_exception
from cyborg_lite.programming import regions
from cyborg_lite.scheduling import locks as locks_mod
from cyborg_lite.scheduling import routing

#: conflicts that say "this region cannot serve the group now", which a
#: sibling region of the same host may still serve.
SIBLING_MAY_SERVE = (exception.NoFreeAttachHandle,
                     exception.DeployableNotReady,
                     prog_exception.RegionBusy, prog_exception.RegionInUse,
                     prog_exception.RegionKept,
                     prog_exception.RegionNotProgrammable)

#: how many times one PATCH moves an ARQ to a sibling region.
MAX_SIBLING_MOVES = 3

LOG = logging.getLogger(__name__)

#: group keys that ask for a function in the region.
PROGRAMMING_KEYS = ("accel:function_id", "accel:bitstream_id")


class RegionCannotServe(exception.Conflict):
    """The region given for ``arq`` cannot serve its group now (the
    ``cause``); carries what a move to a sibling region needs."""

    msg_fmt = "%(reason)s"

    def __init__(self, cause, arq, group, fields):
        super().__init__(reason=cause.message)
        self.cause = cause
        self.arq = arq
        self.group = group
        self.fields = fields


class SiblingServes(Exception):
    """A sibling region of the same host already runs (or is being
    programmed with) what ``arq``'s group asks for and has a free handle:
    binding there spares programming the region Nova chose, and keeps that
    region free for another function."""

    def __init__(self, arq, group, fields, target):
        super().__init__(target)
        self.arq = arq
        self.group = group
        self.fields = fields
        self.target = target


class NoRegionCanServe(exception.Conflict):
    msg_fmt = ("%(reason)s No other region of host %(host)s can serve "
               "ARQ %(arq)s now.")


class InstanceAlreadyBound(exception.Invalid):
    msg_fmt = ("Instance %(instance)s already has bound accelerator "
               "requests%(arqs)s; adding more is not supported.")


def canonical_uuid(value):
    """The dashed lower-case form of a UUID string."""
    return str(uuidlib.UUID(str(value)))


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


def attach_handle_info(handle):
    """``attach_handle_info`` exactly as Nova's libvirt driver reads it:
    string ``domain/bus/device/function`` (plus ``asked_type`` for MDEV,
    ``physical_network`` for NIC ports)."""
    domain, bus, rest = handle.pci_address.lower().split(":")
    device, function = rest.split(".")
    info = {"domain": domain, "bus": bus, "device": device,
            "function": function}
    if handle.type == "MDEV":
        info["asked_type"] = handle.mdev_type
        info["vgpu_mark"] = f"{handle.mdev_type}_{handle.uuid}"
    if handle.physical_network:
        info["physical_network"] = handle.physical_network
    return info


def _all_found(uuids, by_uuid):
    """``by_uuid``; :raises ARQNotFound: naming the ``uuids`` not in it."""
    missing = [u for u in uuids if u not in by_uuid]
    if missing:
        raise exception.ARQNotFound(uuids=exception.some(missing))
    return by_uuid


def _load_arqs(session, uuids, project_id):
    found = arq_db.get_all(session, project_id=project_id, uuids=uuids)
    return _all_found(uuids, {arq.uuid: arq for arq in found})


#: :func:`_instant_target`'s answer for a region being programmed that the
#: ARQ joins.
JOIN = object()


def _instant_target(session, deployable, device, group, can_join):
    """Re-read the region under a shared lock for an instant bind.

    :param can_join: a programming run can be joined (a group asking for
        no function does not care what the run loads).
    :returns: the fresh row; None when it needs programming after all;
        :data:`JOIN` when the ARQ waits for the run under way.
    :raises DeployableNotReady: when it is programming (and cannot be
        joined), in error or on a disabled device.
    """
    deployable = regions.lock_shared(session, deployable.id)
    if needs_programming(group, deployable) is not None:
        return None
    if (can_join and deployable.state == regions.PROGRAMMING
            and device.status == "enabled"
            and not any(group.get(key) for key in PROGRAMMING_KEYS)):
        return JOIN
    if deployable.state != regions.READY or device.status != "enabled":
        state = deployable.state
        if state == regions.PROGRAMMING:
            state = "being programmed with " + regions.target_text(
                deployable.target_function_id,
                deployable.target_bitstream_id)
        elif state == regions.READY:
            state = f"on a {device.status} device"
        raise exception.DeployableNotReady(deployable=deployable.uuid,
                                           state=state)
    return deployable


def _bound_elsewhere(arq, fields):
    return exception.ARQBadState(
        uuid=arq.uuid, state=arq.state,
        action=f"binding to instance {fields['instance_uuid']} "
               f"(it is bound to {arq.instance_uuid})",
        expected=", ".join(states.BINDABLE))


def _is_repeat(arq, fields):
    """Is this the bind ``arq`` already has (or is getting)?"""
    return arq.state in (states.BOUND, states.BIND_STARTED) and (
        arq.hostname, arq.device_rp_uuid, arq.instance_uuid) == (
        fields["hostname"], fields["device_rp_uuid"],
        fields["instance_uuid"])


def _bind_instantly(session, arq, fields, deployable, notify):
    """Bind ``arq`` to a free handle of ``deployable`` (locked shared).

    One conditional UPDATE moves the ARQ from a bindable state straight to
    ``Bound`` and takes a handle, in the same statement where the database
    allows it (the transaction rolls both back if none is free).

    :returns: True when bound, False when a concurrent identical bind
        committed first (nothing to do).
    """
    moved, taken = states.move_taking_handle(
        session, arq, states.BOUND, deployable.id, via=states.BIND_STARTED,
        deployable_id=deployable.id,
        notification="pending" if notify else None, **fields)
    if not moved:
        if _is_repeat(arq, fields):
            return False
        raise _bound_elsewhere(arq, fields)
    if not taken:
        raise exception.NoFreeAttachHandle(
            deployable=deployable.uuid, rp_uuid=fields["device_rp_uuid"],
            arq=arq.uuid)
    return True


def _bind_verified(session, arq, fields, deployable, device, notify):
    """Bind ``arq`` to a free handle of ``deployable``, read without a
    lock and found ready to serve it, in one statement that takes the
    shared lock on the region's row and checks it still holds what the
    decision read (:func:`.arq_states.move_at_once`).

    :returns: True when bound; None when nothing was done: the region was
        read under its lock already, is not ready, changed since it was
        read, the ARQ was not bindable, no free handle was unheld, or the
        database cannot do it in one statement (the caller then locks the
        region and decides again).
    """
    if (deployable.state != regions.READY or device.status != "enabled"
            or not handle_db.checks_region(session)
            or deployable_db.is_share_locked(session, deployable.id)):
        return None
    return _bound_at_once(session, arq, fields, deployable, notify) or None


def _bind_at_once(session, binds, project_id, notify):
    """Bind one ARQ in autocommit: one statement reads it, its group and
    region; one more binds it (:func:`.arq_states.move_at_once`). Only
    for the plain case, an instant bind of an ARQ that may be bound to an
    instance no other ARQ is bound to.

    :returns: what :func:`_reserve` returns, or None when nothing was
        written and the bind needs the transaction (anything else: the
        ARQ not found or not bindable, a repeat, programming, the region
        not ready, changed or without a free handle no one holds).
    """
    ((arq_uuid, fields),) = binds.items()
    rows, others, (deployable, device) = arq_db.for_bind_with_region(
        session, arq_uuid, fields["instance_uuid"], fields["device_rp_uuid"],
        project_id)
    if len(rows) != 1 or others or deployable is None:
        return None
    ((arq, group),) = rows
    if arq.state not in states.BINDABLE:
        return None
    try:
        served = _as_kept(arq, group, deployable)
    except exception.Conflict:
        return None
    if (needs_programming(served, deployable) is not None
            or deployable.state != regions.READY
            or device.status != "enabled"):
        return None
    if handle_db.without_physical_network(session, deployable, device):
        return None  # NOTE(cyborg_lite): the transaction refuses it.
    if not _bound_at_once(session, arq, fields, deployable, notify):
        return None
    return ([arq.uuid], [None], {deployable.id},
            [_served_lock(served, deployable)])


def _bound_at_once(session, arq, fields, deployable, notify):
    return states.move_at_once(
        session, arq, states.BOUND, deployable.id, _as_read(deployable),
        via=states.BIND_STARTED, deployable_id=deployable.id,
        notification="pending" if notify else None, **fields)


#: the region's columns an instant bind's decision read (what
#: :func:`needs_programming` and :func:`_as_kept` look at).
_READ_AHEAD = ("state", "function_id", "bitstream_id", "device_id",
               "assigned_function_id", "assigned_bitstream_id",
               "assigned_until")


def _as_read(deployable):
    """``{column: value}`` of what an instant bind's decision read of
    ``deployable``, for the statement that binds to check."""
    return {name: getattr(deployable, name) for name in _READ_AHEAD}


def _reserve(session, binds, project_id, programmer, notify,
             prefer_siblings=None, consume_lookups=False):
    """:param prefer_siblings: ``{arq uuid: providers tried}`` when an ARQ
        that needs programming may move to a sibling that serves it (None:
        it may not).
    :param consume_lookups: consume one routed lookup per ARQ bound, in
        this transaction (:func:`.routing.consumed_in`)."""
    instances = {f["instance_uuid"] for f in binds.values()}
    read = {}  # NOTE(cyborg_lite): {arq uuid: (region, device)} read ahead
    if len(binds) == 1 and handle_db.checks_region(session):
        # NOTE(cyborg_lite): Nova's bind of one ARQ reads its region in the
        # same statement, without a lock: an instant bind locks it as it
        # writes (_bind_verified).
        ((arq_uuid, fields),) = binds.items()
        rows, bound_to, read[arq_uuid] = arq_db.for_bind_with_region(
            session, arq_uuid, fields["instance_uuid"],
            fields["device_rp_uuid"], project_id)
    else:
        rows, bound_to = arq_db.for_bind(session, list(binds), instances,
                                         project_id)
    arqs = _all_found(binds, {arq.uuid: (arq, group) for arq, group in rows})
    bound, jobs, touched, contents = [], [], set(), []
    for instance in sorted(instances):
        others = bound_to.get(instance)
        if others and _rescheduled(others, binds, instance, arqs):
            # NOTE(cyborg_lite): Nova 34 reschedules a build that failed on
            # its first host before nova-compute deleted its ARQs (a failed
            # claim) and binds new ones on the next host: the old bindings
            # belong to a build that is over.
            LOG.info("Instance %s rescheduled: ARQs %s bound on %s are "
                     "unbound", instance, ", ".join(a.uuid for a in others),
                     ", ".join(sorted({a.hostname for a in others})))
            touched |= {a.deployable_id for a in others if a.deployable_id}
            _unbind_rows(session, others)
            continue
        if others:
            # NOTE(cyborg_lite): name only what the caller may see: another
            # project's ARQ uuids would tell it they exist.
            visible = [a.uuid for a in others
                       if project_id is None or a.project_id == project_id]
            raise InstanceAlreadyBound(
                instance=instance,
                arqs=f" ({exception.some(visible)})" if visible else "")
    for arq_uuid, fields in binds.items():
        arq, group = arqs[arq_uuid]
        if _is_repeat(arq, fields):
            continue  # the identical bind repeated: nothing to do
        if arq.state in (states.BOUND, states.BIND_STARTED):
            raise _bound_elsewhere(arq, fields)
        if arq.state not in states.BINDABLE:
            raise exception.ARQBadState(
                uuid=arq.uuid, state=arq.state, action="binding",
                expected=", ".join(states.BINDABLE))
        if arq_uuid in read:
            deployable, device = read[arq_uuid]
        else:
            # NOTE(cyborg_lite): a group asking for no function binds
            # instantly (or joins a run): lock the region as it is read.
            deployable, device = deployable_db.with_device_by_rp(
                session, fields["device_rp_uuid"], lock_shared=not any(
                    group.get(key) for key in PROGRAMMING_KEYS))
        if deployable is None:
            raise exception.ResourceProviderNotFound(
                rp_uuid=fields["device_rp_uuid"], arq=arq.uuid)
        try:
            served = _as_kept(arq, group, deployable)
            done, job = _bind_one(
                session, arq, served, fields, deployable, device, programmer,
                notify, None if prefer_siblings is None
                else prefer_siblings.setdefault(arq.uuid, set()))
        except SIBLING_MAY_SERVE as error:
            raise RegionCannotServe(error, arq.uuid, group, fields)
        touched.add(deployable.id)
        contents.append(_served_lock(served, deployable))
        if done:
            bound.append(arq.uuid)
        jobs.append(job)
    if consume_lookups and contents:
        routing.consumed_in(session, contents)
    return bound, jobs, touched, contents


def _served_lock(group, deployable):
    """The lock trait of what a bind of ``group`` to ``deployable`` gets:
    the content whose routed lookup it consumes."""
    if group.get("accel:function_id"):
        return inventory.lock_trait(group["accel:function_id"])
    if group.get("accel:bitstream_id"):
        return inventory.lock_trait(bitstream_id=group["accel:bitstream_id"])
    if deployable.state == regions.PROGRAMMING:
        return inventory.lock_trait(deployable.target_function_id,
                                    deployable.target_bitstream_id)
    return inventory.lock_trait(deployable.function_id,
                                deployable.bitstream_id)


def _rescheduled(others, binds, instance, arqs):
    """Are ``others`` (bound to ``instance``) left from a build of the
    same project on another host, the PATCH binding it on a new one?"""
    mine = [fields for fields in binds.values()
            if fields["instance_uuid"] == instance]
    hosts = {fields["hostname"] for fields in mine}
    projects = {arqs[uuid][0].project_id for uuid, fields in binds.items()
                if fields["instance_uuid"] == instance}
    return all(a.state == states.BOUND and a.hostname
               and a.hostname not in hosts and a.project_id in projects
               for a in others)


def _bind_one(session, arq, group, fields, deployable, device, programmer,
              notify, prefer_avoiding=None):
    """Bind one ARQ to ``deployable`` now, or start (or join) the
    programming it needs.

    :param prefer_avoiding: when not None, an ARQ that needs programming
        first looks for a sibling that serves it (providers in this set
        excepted) and raises :class:`SiblingServes` when there is one.
    :returns: ``(bound now, job to launch or None)``.
    """
    handle_db.refuse_without_physical_network(session, arq.uuid, fields,
                                              deployable, device)
    if needs_programming(group, deployable) is None:
        done = _bind_verified(session, arq, fields, deployable, device,
                              notify)
        if done is not None:
            return done, None
        fresh = _instant_target(session, deployable, device, group,
                                can_join=programmer is not None)
        if fresh is JOIN:
            states.move(session, arq, states.BIND_STARTED, **fields)
            programmer.hold(session, arq, deployable)
            return False, None
        if fresh is not None:
            return _bind_instantly(session, arq, fields, fresh,
                                   notify), None
    if device.status != "enabled":
        raise exception.DeployableNotReady(
            deployable=deployable.uuid,
            state=f"on a {device.status} device")
    if programmer is None:
        wanted = needs_programming(group, deployable)
        running = (deployable.function_id or deployable.bitstream_id
                   or "nothing")
        raise exception.ProgrammingUnavailable(
            deployable=deployable.uuid, running=running,
            arq=arq.uuid, asked=f"{wanted[0]}={wanted[1]}")
    if prefer_avoiding is not None:
        key, asked = needs_programming(group, deployable)
        function_id = asked if key == "accel:function_id" else None
        target = deployable_db.serving_sibling(
            session, deployable, device.hostname, function_id,
            None if function_id else asked, avoid=prefer_avoiding)
        if target is not None:
            raise SiblingServes(arq.uuid, group, fields, target)
    states.move(session, arq, states.BIND_STARTED, **fields)
    # NOTE(cyborg_lite): the programmer takes over from BindStarted:
    # region taken, handle reserved; Bound or BindFailed come later.
    return False, programmer.start(session, arq, deployable, group)


def _as_kept(arq, group, deployable):
    """The group as binding to ``deployable`` serves it, while lookup
    routing keeps the region for a content
    (:mod:`cyborg_lite.scheduling.routing`): a group asking for no
    function gets what the region is kept for (loaded first when it is not
    loaded yet); one asking for something else is refused, so a boot
    scheduled from an older answer never takes a region kept for the boots
    routed to it.

    :raises RegionKept: (409; a sibling region may still serve it).
    """
    kept = locks_mod.kept_for(deployable)
    if kept is None:
        return group
    if not any(group.get(key) for key in PROGRAMMING_KEYS):
        if kept[0]:
            return {**group, "accel:function_id": kept[0]}
        if kept[1]:
            return {**group, "accel:bitstream_id": kept[1]}
        return group
    allowed = locks_mod.group_allows(group, {kept})
    if inventory.lock_trait(*kept) in allowed:
        return group
    asked = group.get("accel:function_id") or group.get("accel:bitstream_id")
    raise prog_exception.RegionKept(
        deployable=deployable.uuid, arq=arq.uuid, asked=asked,
        kept=regions.target_text(*kept) if any(kept)
        else "boots asking for no function")


def _fail(session, binds, project_id):
    """Mark the PATCH's bindable ARQs ``BindFailed``.

    :returns: their uuids, and the lock traits of the functions their
        groups ask for (their routed lookups are over).
    """
    rows, _ = arq_db.for_bind(session, list(binds), [], project_id)
    failed, asked = [], []
    for arq, group in rows:
        if arq.state in states.BINDABLE:
            states.move(session, arq, states.BIND_FAILED,
                        notification=None, **binds[arq.uuid])
            failed.append(arq.uuid)
            if group.get("accel:function_id"):
                asked.append(inventory.lock_trait(group["accel:function_id"]))
    return failed, asked


def bind(db, binds, project_id=None, programmer=None, notify=True,
         locks=None, siblings=None, defer=None):
    """Bind ARQs, all or nothing.

    ARQs whose region must be programmed first stay ``BindStarted``; the
    programmer resolves them in the background and notifies Nova itself.

    :param db: the :class:`cyborg_lite.db.engine.Database`.
    :param binds: {arq uuid: {hostname, device_rp_uuid, instance_uuid}}.
    :param project_id: restrict to this project's ARQs (None: any).
    :param programmer: a :class:`cyborg_lite.programming.programmer.
        Programmer`, or None (programming at bind time unavailable).
    :param notify: mark new binds for a Nova event.
    :param locks: a :class:`~cyborg_lite.scheduling.locks.LockTraits`
        (None: lock traits are not written).
    :param siblings: a :class:`~cyborg_lite.scheduling.siblings.
        SiblingMover` (None: an ARQ is bound where Nova said or not at all).
    :param defer: called with the lock trait write, to run it once the
        answer is sent (None: written before returning).
    :raises ARQNotFound, ResourceProviderNotFound: 404.
    :raises ARQBadState, NoFreeAttachHandle, ProgrammingUnavailable,
        ProgrammingConflict: 409, when no region of the host can serve;
        the PATCH's bindable ARQs are left ``BindFailed`` (Nova 34 puts
        the server in ERROR; it does not reschedule).
    :raises InstanceAlreadyBound: 400.
    :returns: uuids of the ARQs this call bound (identical repeats and
        ARQs waiting for programming are not included).
    """
    binds = {canonical_uuid(arq): {
        **fields,
        "device_rp_uuid": canonical_uuid(fields["device_rp_uuid"]),
        "instance_uuid": canonical_uuid(fields["instance_uuid"])}
        for arq, fields in binds.items()}
    for fields in binds.values():
        fields.pop("project_id", None)
    tried, touched, bound, served = {}, set(), [], []
    routing_on = locks is not None and locks.enabled
    prefer = ({} if siblings is not None and siblings.enabled
              and programmer is not None else None)
    at_once = None
    if len(binds) == 1 and not routing_on and handle_db.binds_at_once(
            db.engine.dialect):
        # NOTE(cyborg_lite): Nova's bind of one ARQ to a region that serves
        # it, in two statements and no transaction; anything else in one
        # transaction, below.
        at_once = db.autocommit(_bind_at_once, binds, project_id, notify)
    try:
        while at_once is None:
            try:
                bound, jobs, touched, served = db.run(
                    _reserve, binds, project_id, programmer, notify, prefer,
                    routing_on)
                break
            except SiblingServes as serving:
                # NOTE(cyborg_lite): not tried again for this ARQ, moved or
                # not (Placement refuses a move to a region it sees full).
                prefer[serving.arq].add(serving.target)
                if _to_serving_sibling(siblings, serving):
                    binds[serving.arq]["device_rp_uuid"] = serving.target
                continue
            except RegionCannotServe as error:
                moved = _to_sibling(siblings, error, tried)
                if moved is not None:
                    binds[error.arq]["device_rp_uuid"] = moved
                    continue
                if siblings is None or not siblings.enabled:
                    raise error.cause
                raise NoRegionCanServe(reason=error.message, arq=error.arq,
                                       host=error.fields["hostname"])
        if at_once is not None:
            bound, jobs, touched, served = at_once
        jobs = [job for job in jobs if job is not None]
        if jobs:
            _refuse_jobs_without_image(db, programmer, jobs, binds)
    except (exception.ResourceProviderNotFound,
            exception.Conflict) as error:
        # NOTE(cyborg_lite): the 409 is how Nova learns it (no event: Nova
        # 34 handles a failed bind reliably only as the PATCH's answer).
        if bound:
            db.run(_undo_instant, bound)
        failed, asked = db.run(_fail, binds, project_id)
        LOG.info("Bind of %s failed: %s", ", ".join(failed) or
                 ", ".join(binds), error.message)
        # NOTE(cyborg_lite): Nova puts the server in ERROR: its routed
        # lookup is not waiting any more.
        _sync_locks(locks, touched, defer, served=asked, db=db)
        raise
    _sync_locks(locks, touched, defer, served=served, db=db, consumed=True)
    if jobs and programmer is not None:
        programmer.launch(jobs)
    return bound


def _sync_locks(locks, deployable_ids, defer=None, served=(), db=None,
                consumed=False):
    """Write the lock traits of these regions; with ``served``, first
    consume one routed lookup of each content asked for (``consumed``:
    bound, their lookups consumed already) and end the keeps of contents
    no lookup waits for any more (:mod:`cyborg_lite.scheduling.routing`).
    """
    if locks is None or not locks.enabled or not (deployable_ids or served):
        return

    def work():
        released = []
        if served:
            try:
                released = (routing.release(db, served) if consumed
                            else routing.consume(db, served))
            except Exception as error:
                # NOTE(cyborg_lite): the lookup or keep then waits out its
                # lease.
                LOG.warning("Routed lookups of %s not consumed or their "
                            "regions not released: %s",
                            ", ".join(served), error)
        locks.sync(set(deployable_ids) | set(released))

    if defer is None:
        work()
    else:
        # NOTE(cyborg_lite): the scheduler reads the trait; the bind itself
        # is decided by the database. Writing it after the answer keeps its
        # Placement calls off Nova's boot path.
        defer(work)


def _undo_instant(session, arq_uuids):
    """Unbind what a PATCH bound at once before one of its programming
    runs was refused (the PATCH is all or nothing)."""
    _unbind_rows(session, arq_db.get_all(session, uuids=arq_uuids))


def _to_sibling(siblings, error, tried):
    """Move the instance's allocation away from a region that cannot serve
    the group; the new provider, or None."""
    if siblings is None:
        return None
    arq_tried = tried.setdefault(error.arq, set())
    if len(arq_tried) >= MAX_SIBLING_MOVES:
        return None
    rp_uuid = error.fields["device_rp_uuid"]
    arq_tried.add(rp_uuid)
    try:
        moved = siblings.move(error.fields["instance_uuid"], rp_uuid,
                              error.group, avoid=arq_tried)
    except Exception as exc:
        LOG.warning("ARQ %s: no sibling of region %s looked up: %s",
                    error.arq, rp_uuid, exc)
        return None
    if moved is not None:
        LOG.info("ARQ %s: region %s cannot serve it (%s); bound to %s of "
                 "the same host instead", error.arq, rp_uuid, error.message,
                 moved)
    return moved


def _to_serving_sibling(siblings, serving):
    """Move the instance's allocation to the sibling that already serves
    the group; False when it stays (the bind then programs the region Nova
    chose)."""
    source = serving.fields["device_rp_uuid"]
    try:
        moved = siblings.move_to(serving.fields["instance_uuid"], source,
                                 serving.target, serving.group)
    except Exception as exc:
        LOG.warning("ARQ %s: allocation not moved to region %s: %s",
                    serving.arq, serving.target, exc)
        return False
    if moved:
        LOG.info("ARQ %s: region %s of the same host already serves its "
                 "group; bound there instead of programming %s",
                 serving.arq, serving.target, source)
    return moved


def _refuse_jobs_without_image(db, programmer, jobs, binds):
    """Ask the agents for the images the jobs need before launching any;
    when one is missing, give every job's regions back and raise.

    :raises NoImageForTarget: (409) naming the first job refused.
    """
    refused = programmer.check_images(jobs)
    if not refused:
        return
    job, cause = refused[0]
    reason = (cause.message if hasattr(cause, "message") else str(cause))
    others = []
    for each in jobs:
        failed = programmer.abandon(
            each, f"not programmed: no image for {job.target} ({reason})")
        others += [uuid for uuid in failed if uuid not in binds]
    # NOTE(cyborg_lite): ARQs of other PATCHes that joined these runs were
    # answered 202 already: they learn it from a failed event.
    programmer.notify(others)
    raise prog_exception.NoImageForTarget(
        deployable=job.regions[0].uuid, asked=job.target, reason=reason)


def _unbind_rows(session, arqs):
    handle_db.release(session, [arq.id for arq in arqs])
    for arq in arqs:
        states.move(session, arq, states.UNBOUND, hostname=None,
                    device_rp_uuid=None, instance_uuid=None,
                    deployable_id=None, notification=None)


def unbind(db, arq_uuids, project_id=None, locks=None, defer=None):
    """Unbind ARQs: free their handles, clear host/RP/instance.

    Repeating it is harmless. :raises ARQNotFound: for unknown ARQs.
    """
    uuids = [canonical_uuid(u) for u in arq_uuids]

    def _run(session):
        arqs = list(_load_arqs(session, uuids, project_id).values())
        regions_held = {a.deployable_id for a in arqs if a.deployable_id}
        _unbind_rows(session, arqs)
        return regions_held

    released = db.run(_run)
    _sync_locks(locks, released, defer)


def delete(db, arq_uuids=None, instance_uuid=None, project_id=None,
           is_service=False, locks=None, defer=None):
    """Delete ARQs by uuid list or by instance, unbinding them first.

    By uuids: deletes those that exist, then raises ARQNotFound naming the
    missing ones (as real Cyborg). A bound ARQ needs a service token, checked
    before anything is deleted.
    """
    def _run(session):
        if instance_uuid is not None:
            arqs = arq_db.get_all(session, project_id=project_id,
                                   instance_uuid=instance_uuid)
        else:
            arqs = arq_db.get_all(session, project_id=project_id,
                                   uuids=arq_uuids)
        if not is_service:
            bound = [a.uuid for a in arqs if a.state != states.INITIAL
                     and (a.instance_uuid or a.state == states.BOUND)]
            if bound:
                raise exception.ServiceTokenRequired(
                    action=f"deleting bound ARQ(s) {', '.join(bound)}",
                    roles="the service token roles")
        handle_db.release(session, [a.id for a in arqs])
        gone = arq_db.delete_rows(session, [a.id for a in arqs])
        return ({a.uuid for a in arqs if a.id in gone},
                {a.deployable_id for a in arqs if a.deployable_id})

    deleted, released = db.run(_run)
    _sync_locks(locks, released, defer)
    if arq_uuids is not None:
        missing = [u for u in arq_uuids if u not in deleted]
        if missing:
            raise exception.ARQNotFound(uuids=exception.some(missing))
