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
resolves it in the background (:mod:`cyborg_lite.programming`).
"""

import uuid as uuidlib

from oslo_log import log as logging

from cyborg_lite import arq_states as states
from cyborg_lite import exception
from cyborg_lite.db import arqs as arq_db
from cyborg_lite.db import attach_handles as handle_db
from cyborg_lite.db import deployables as deployable_db
from cyborg_lite.programming import exception as prog_exception
from cyborg_lite.programming import regions

LOG = logging.getLogger(__name__)

#: group keys that ask for a function in the region.
PROGRAMMING_KEYS = ("accel:function_id", "accel:bitstream_id")


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


def _instant_target(session, deployable, device, group):
    """Re-read the region under a shared lock for an instant bind.

    :returns: the fresh row, or None when it needs programming after all.
    :raises DeployableNotReady: when it is programming, in error or on a
        disabled device.
    """
    deployable = regions.lock_shared(session, deployable.id)
    if needs_programming(group, deployable) is not None:
        return None
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
    ``Bound``; then a handle is taken (the transaction rolls both back if
    none is free).

    :returns: True when bound, False when a concurrent identical bind
        committed first (nothing to do).
    """
    moved = states.move(session, arq, states.BOUND, via=states.BIND_STARTED,
                        deployable_id=deployable.id,
                        notification="pending" if notify else None,
                        **fields)
    if not moved:
        if _is_repeat(arq, fields):
            return False
        raise _bound_elsewhere(arq, fields)
    if handle_db.take_free(session, deployable.id, arq.id) is None:
        raise exception.NoFreeAttachHandle(
            deployable=deployable.uuid, rp_uuid=fields["device_rp_uuid"],
            arq=arq.uuid)
    return True


def _reserve(session, binds, project_id, programmer, notify):
    instances = {f["instance_uuid"] for f in binds.values()}
    rows, bound_to = arq_db.for_bind(session, list(binds), instances,
                                     project_id)
    arqs = _all_found(binds, {arq.uuid: (arq, group) for arq, group in rows})
    for instance in sorted(instances):
        others = bound_to.get(instance)
        if others:
            # NOTE(cyborg_lite): name only what the caller may see: another
            # project's ARQ uuids would tell it they exist.
            visible = [a.uuid for a in others
                       if project_id is None or a.project_id == project_id]
            raise InstanceAlreadyBound(
                instance=instance,
                arqs=f" ({exception.some(visible)})" if visible else "")
    bound, jobs = [], []
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
        deployable, device = deployable_db.with_device_by_rp(
            session, fields["device_rp_uuid"])
        if deployable is None:
            raise exception.ResourceProviderNotFound(
                rp_uuid=fields["device_rp_uuid"], arq=arq.uuid)
        if needs_programming(group, deployable) is None:
            fresh = _instant_target(session, deployable, device, group)
            if fresh is not None:
                if _bind_instantly(session, arq, fields, fresh, notify):
                    bound.append(arq.uuid)
                continue
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
        states.move(session, arq, states.BIND_STARTED, **fields)
        # NOTE(cyborg_lite): the programmer takes over from BindStarted:
        # region taken, handle reserved; Bound or BindFailed come later.
        jobs.append(programmer.start(session, arq, deployable, group))
    return bound, jobs


def _fail(session, binds, project_id, notify=False):
    arqs = arq_db.get_all(session, project_id=project_id,
                           uuids=list(binds))
    failed = []
    for arq in arqs:
        if arq.state in states.BINDABLE:
            states.move(session, arq, states.BIND_FAILED,
                        notification="pending" if notify else None,
                        **binds[arq.uuid])
            failed.append(arq.uuid)
    return failed


def bind(db, binds, project_id=None, programmer=None, notify=True):
    """Bind ARQs, all or nothing.

    ARQs whose region must be programmed first stay ``BindStarted``; the
    programmer resolves them in the background and notifies Nova itself.

    :param db: the :class:`cyborg_lite.db.engine.Database`.
    :param binds: {arq uuid: {hostname, device_rp_uuid, instance_uuid}}.
    :param project_id: restrict to this project's ARQs (None: any).
    :param programmer: a :class:`cyborg_lite.programming.programmer.
        Programmer`, or None (programming at bind time unavailable).
    :param notify: mark new binds for a Nova event.
    :raises ARQNotFound, ResourceProviderNotFound: 404.
    :raises ARQBadState, NoFreeAttachHandle, ProgrammingUnavailable,
        ProgrammingConflict: 409; the PATCH's bindable ARQs are left
        ``BindFailed`` (for a programming conflict Nova also gets a
        ``failed`` event, so it reschedules).
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
    try:
        bound, jobs = db.run(_reserve, binds, project_id, programmer, notify)
    except (exception.ResourceProviderNotFound,
            exception.Conflict) as error:
        events = (notify and programmer is not None
                  and isinstance(error, prog_exception.ProgrammingConflict))
        failed = db.run(_fail, binds, project_id, events)
        LOG.info("Bind of %s failed: %s", ", ".join(binds), error.message)
        if events:
            programmer.notify(failed)
        raise
    if jobs and programmer is not None:
        programmer.launch(jobs)
    return bound


def _unbind_rows(session, arqs):
    handle_db.release(session, [arq.id for arq in arqs])
    for arq in arqs:
        states.move(session, arq, states.UNBOUND, hostname=None,
                    device_rp_uuid=None, instance_uuid=None,
                    deployable_id=None, notification=None)


def unbind(db, arq_uuids, project_id=None):
    """Unbind ARQs: free their handles, clear host/RP/instance.

    Repeating it is harmless. :raises ARQNotFound: for unknown ARQs.
    """
    uuids = [canonical_uuid(u) for u in arq_uuids]

    def _run(session):
        arqs = _load_arqs(session, uuids, project_id)
        _unbind_rows(session, list(arqs.values()))

    db.run(_run)


def delete(db, arq_uuids=None, instance_uuid=None, project_id=None,
           is_service=False):
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
        return {a.uuid for a in arqs if a.id in gone}

    deleted = db.run(_run)
    if arq_uuids is not None:
        missing = [u for u in arq_uuids if u not in deleted]
        if missing:
            raise exception.ARQNotFound(uuids=exception.some(missing))
