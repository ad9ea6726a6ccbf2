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

A bind is three steps in one transaction (:func:`_reserve`): one read
returns what the decision needs (:func:`cyborg_lite.db.binds.read`); a
pure decision names what happens to each ARQ (:mod:`.plan`); one writer
applies it (:func:`cyborg_lite.db.binds.write`). What follows the commit
is one value, run in one place (:mod:`.effects`).

A bind PATCH is all-or-nothing: when any ARQ of it is refused, nothing is
written, and the PATCH's ARQs are marked ``BindFailed`` in a second
transaction, so Nova's ``GET ?instance=`` sees a resolved state, never a
``BindStarted`` left behind. An ARQ whose region must first be programmed
stays ``BindStarted`` after the PATCH (its handle reserved, the region
``programming``); the programmer resolves it in the background
(:mod:`cyborg_lite.programming`). So does an ARQ that asks for no function
and finds its region being programmed: it joins the run, whatever it
loads.

Nova 34 does not reschedule a failed bind (a 409 puts the server in ERROR),
so the bind does what it can before refusing: when the region Nova
allocated cannot serve the group (another boot locked or took it since it
was scheduled), the instance's allocation is moved to a region of the same
host that can (:mod:`cyborg_lite.scheduling.siblings`) and the bind
decides again; and what would only fail later on the host (no image for
the function) is asked of the agent before the PATCH is answered.
"""

import uuid as uuidlib

from oslo_log import log as logging

from accel_common import inventory
from cyborg_lite import arq_states
from cyborg_lite import exception
from cyborg_lite.binding import effects as effects_mod
from cyborg_lite.binding import plan
from cyborg_lite.db import arqs as arq_db
from cyborg_lite.db import attach_handles as handle_db
from cyborg_lite.db import binds as bind_db
from cyborg_lite.db import deployables as deployable_db
from cyborg_lite.programming import exception as prog_exception
from cyborg_lite.scheduling import routing

LOG = logging.getLogger(__name__)

Action = plan.Action
InstanceAlreadyBound = plan.InstanceAlreadyBound
#: group keys that ask for a function in the region.
PROGRAMMING_KEYS = deployable_db.PROGRAMMING_KEYS
needs_programming = deployable_db.needs_programming

#: how many times one PATCH moves an ARQ to a sibling region.
MAX_SIBLING_MOVES = 3


class NoRegionCanServe(exception.Conflict):
    msg_fmt = ("%(reason)s No other region of host %(host)s can serve "
               "ARQ %(arq)s now.")


def canonical_uuid(value):
    """The dashed lower-case form of a UUID string."""
    return str(uuidlib.UUID(str(value)))


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
        "hostname": fields["hostname"],
        "device_rp_uuid": canonical_uuid(fields["device_rp_uuid"]),
        "instance_uuid": canonical_uuid(fields["instance_uuid"])}
        for arq, fields in binds.items()}
    policy = plan.Policy(
        programming=programmer is not None,
        siblings=siblings is not None and siblings.enabled,
        project_id=project_id)
    routing_on = locks is not None and locks.enabled
    moves = _Moves(siblings, prefer=policy.siblings and policy.programming)
    start = programmer.start if programmer is not None else None
    bound, after = [], effects_mod.Effects()
    try:
        while True:
            try:
                outcome = bind_db.run(
                    db, _reserve, binds, policy, moves.serving, start, notify,
                    routing_on, single=len(binds) == 1 and not routing_on)
            except bind_db.Refused as refused:
                # NOTE(cyborg_lite): the database refused a write; the
                # transaction is rolled back.
                outcome = plan.refused(refused.decision, refused.cause,
                                       policy)
            if isinstance(outcome, effects_mod.Effects):
                bound, after = outcome.bound, outcome
                break
            if outcome.action is Action.REFUSE:
                raise outcome.reason
            moves.move(outcome, binds)  # NOTE(cyborg_lite): then again
        if after.jobs:
            _refuse_jobs_without_image(db, programmer, after.jobs, binds)
    except (exception.ResourceProviderNotFound,
            exception.Conflict) as error:
        # NOTE(cyborg_lite): the 409 is how Nova learns it (no event: Nova
        # 34 handles a failed bind reliably only as the PATCH's answer).
        if bound:
            db.run(bind_db.unbind, bound)
        failed = db.run(bind_db.fail, binds, project_id)
        LOG.info("Bind of %s failed: %s", ", ".join(
            uuid for uuid, _ in failed) or ", ".join(binds), error.message)
        # NOTE(cyborg_lite): Nova puts the server in ERROR: its routed
        # lookup is not waiting any more.
        effects_mod.Effects(
            touched=after.touched, consumed=False,
            served=[inventory.lock_trait(group["accel:function_id"])
                    for _, group in failed
                    if group.get("accel:function_id")]).run(
            db, locks, defer=defer)
        raise
    after.run(db, locks, programmer, defer)
    return bound


def _reserve(session, binds, policy, tried, start, notify, routing_on,
             autocommit=False):
    """Read, decide, write: one bind in ``session``'s transaction.

    :returns: the :class:`~.effects.Effects` of the commit; or the
        decision that stopped it (refuse, move) before anything was
        written; or None (``autocommit`` only) when the bind needs a
        transaction.
    """
    locked = False
    while True:
        facts = bind_db.read(session, binds, policy.project_id,
                             locked=locked, autocommit=autocommit)
        decisions = plan.decide(facts, binds, policy)
        if not autocommit:
            decisions = [_prefer_serving(session, d, tried)
                         for d in decisions]
        stopped = plan.stop(decisions)
        if stopped is None:
            written = bind_db.write(session, decisions, notify, start,
                                    autocommit=autocommit)
            if not written.again:
                break
        elif stopped.action is not Action.RECHECK:
            return stopped
        if autocommit:
            return None
        # NOTE(cyborg_lite): a region read without its lock changed before
        # it was written (or is not ready): read it again under its lock.
        locked = True
    served = [d.served for d in decisions if d.action in (
        Action.BIND, Action.JOIN, Action.PROGRAM)]
    if routing_on and served:
        routing.consumed_in(session, served)
    return effects_mod.Effects(touched=written.touched, served=served,
                               jobs=written.jobs, bound=written.bound)


def _prefer_serving(session, decision, tried):
    """A PROGRAM decision, or the move to a sibling region that serves
    its group already (when such moves are preferred: ``tried`` is not
    None)."""
    if tried is None or decision.action is not Action.PROGRAM:
        return decision
    target = bind_db.serving_sibling(
        session, decision, plan.asked(decision),
        avoid=tried.setdefault(decision.arq_uuid, set()))
    if target is None:
        return decision
    return plan.to_serving_sibling(decision, target)


class _Moves:
    """The sibling moves of one PATCH.

    :param prefer: an ARQ that needs programming first moves to a sibling
        that serves it already.
    """

    def __init__(self, siblings, prefer):
        self.siblings = siblings
        #: {arq uuid: providers tried}; None when not preferred.
        self.serving = {} if prefer else None
        self.cannot = {}

    def move(self, decision, binds):
        """Move the allocation as ``decision`` says and point ``binds`` at
        the new region.

        :raises: the decision's reason, or :class:`NoRegionCanServe`, when
            no sibling takes it.
        """
        fields = binds[decision.arq_uuid]
        if decision.target is not None:
            # NOTE(cyborg_lite): not tried again for this ARQ, moved or not
            # (Placement refuses a move to a region it sees full).
            self.serving[decision.arq_uuid].add(decision.target)
            if self._to_serving(decision, fields):
                fields["device_rp_uuid"] = decision.target
            return
        moved = self._to_sibling(decision, fields)
        if moved is None:
            if self.siblings is None or not self.siblings.enabled:
                raise decision.reason
            raise NoRegionCanServe(reason=decision.reason.message,
                                   arq=decision.arq_uuid,
                                   host=fields["hostname"])
        fields["device_rp_uuid"] = moved

    def _to_sibling(self, decision, fields):
        """Move the instance's allocation away from a region that cannot
        serve the group; the new provider, or None."""
        arq = decision.arq_uuid
        arq_tried = self.cannot.setdefault(arq, set())
        if len(arq_tried) >= MAX_SIBLING_MOVES:
            return None
        rp_uuid = fields["device_rp_uuid"]
        arq_tried.add(rp_uuid)
        try:
            moved = self.siblings.move(fields["instance_uuid"], rp_uuid,
                                       decision.group, avoid=arq_tried)
        except Exception as exc:
            LOG.warning("ARQ %s: no sibling of region %s looked up: %s",
                        arq, rp_uuid, exc)
            return None
        if moved is not None:
            LOG.info("ARQ %s: region %s cannot serve it (%s); bound to %s "
                     "of the same host instead", arq, rp_uuid,
                     decision.reason.message, moved)
        return moved

    def _to_serving(self, decision, fields):
        """Move the instance's allocation to the sibling that already
        serves the group; False when it stays (the bind then programs the
        region Nova chose)."""
        source = fields["device_rp_uuid"]
        try:
            moved = self.siblings.move_to(fields["instance_uuid"], source,
                                          decision.target, decision.group)
        except Exception as exc:
            LOG.warning("ARQ %s: allocation not moved to region %s: %s",
                        decision.arq_uuid, decision.target, exc)
            return False
        if moved:
            LOG.info("ARQ %s: region %s of the same host already serves "
                     "its group; bound there instead of programming %s",
                     decision.arq_uuid, decision.target, source)
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


def unbind(db, arq_uuids, project_id=None, locks=None, defer=None):
    """Unbind ARQs: free their handles, clear host/RP/instance.

    Repeating it is harmless. :raises ARQNotFound: for unknown ARQs.
    """
    uuids = [canonical_uuid(u) for u in arq_uuids]

    def _run(session):
        found = arq_db.get_all(session, project_id=project_id, uuids=uuids)
        missing = set(uuids) - {arq.uuid for arq in found}
        if missing:
            raise exception.ARQNotFound(uuids=exception.some(
                [u for u in uuids if u in missing]))
        bind_db.unbind_rows(session, found)
        return {a.deployable_id for a in found if a.deployable_id}

    effects_mod.Effects(touched=db.run(_run)).run(db, locks, defer=defer)


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
            bound = [a.uuid for a in arqs if a.state != arq_states.INITIAL
                     and (a.instance_uuid or a.state == arq_states.BOUND)]
            if bound:
                raise exception.ServiceTokenRequired(
                    action=f"deleting bound ARQ(s) {', '.join(bound)}",
                    roles="the service token roles")
        handle_db.release(session, [a.id for a in arqs])
        gone = arq_db.delete_rows(session, [a.id for a in arqs])
        return ({a.uuid for a in arqs if a.id in gone},
                {a.deployable_id for a in arqs if a.deployable_id})

    deleted, released = db.run(_run)
    effects_mod.Effects(touched=released).run(db, locks, defer=defer)
    if arq_uuids is not None:
        missing = [u for u in arq_uuids if u not in deleted]
        if missing:
            raise exception.ARQNotFound(uuids=exception.some(missing))
