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

"""The bind's decision: pure functions of what one read returned.

:func:`decide` takes the :class:`~cyborg_lite.db.binds.Facts` of a PATCH
and returns a :class:`~cyborg_lite.db.binds.Decision` per ARQ: bind now,
join a programming run, program, nothing to do (a repeat), unbind a
leftover of a rescheduled build, move to a sibling region, read the region
again under its lock, or refuse (the decision carries the exception to
raise). No session, no database, no exception for flow: the writer
(:func:`cyborg_lite.db.binds.write`) applies what is decided.
"""

import dataclasses

from accel_common import inventory
from cyborg_lite import arq_states
from cyborg_lite import exception
from cyborg_lite import states
from cyborg_lite.db import binds as bind_db
from cyborg_lite.db import deployables as deployable_db
from cyborg_lite.programming import exception as prog_exception
from cyborg_lite.programming import regions
from cyborg_lite.scheduling import locks as locks_mod

Action = bind_db.Action
Decision = bind_db.Decision

#: refusals that say "this region cannot serve the group now", which a
#: sibling region of the same host may still serve.
SIBLING_MAY_SERVE = (exception.NoFreeAttachHandle,
                     exception.DeployableNotReady,
                     prog_exception.RegionBusy, prog_exception.RegionInUse,
                     prog_exception.RegionKept,
                     prog_exception.RegionNotProgrammable)

_ENABLED = states.DeviceStatus.ENABLED
_READY = states.RegionState.READY
_PROGRAMMING = states.RegionState.PROGRAMMING


class InstanceAlreadyBound(exception.Invalid):
    msg_fmt = ("Instance %(instance)s already has bound accelerator "
               "requests%(arqs)s; adding more is not supported.")


@dataclasses.dataclass(frozen=True)
class Policy:
    """What the service allows a bind."""

    #: a programmer runs: a bind may program its region, or join a run.
    programming: bool = False
    #: an allocation may move to a sibling region of the same host.
    siblings: bool = False
    #: the caller's project (None: any); only its ARQs are named.
    project_id: str = None


def decide(facts, binds, policy):
    """A decision for each ARQ of the PATCH ``binds``, in its order
    (preceded by the unbinds of rescheduled builds' leftovers).

    :returns: a list of :class:`Decision`; when one refuses, moves or
        rechecks, nothing is written (see :func:`stop`).
    """
    missing = [uuid for uuid in binds if uuid not in facts.arqs]
    if missing:
        return [Decision(Action.REFUSE, reason=exception.ARQNotFound(
            uuids=exception.some(missing)))]
    decisions = []
    for instance in sorted({f["instance_uuid"] for f in binds.values()}):
        others = facts.others.get(instance)
        if not others:
            continue
        if not _rescheduled(others, binds, instance, facts.arqs):
            # NOTE(cyborg_lite): name only what the caller may see: another
            # project's ARQ uuids would tell it they exist.
            visible = [a.uuid for a in others if policy.project_id is None
                       or a.project_id == policy.project_id]
            return [Decision(Action.REFUSE, reason=InstanceAlreadyBound(
                instance=instance,
                arqs=f" ({exception.some(visible)})" if visible else ""))]
        # NOTE(cyborg_lite): Nova 34 reschedules a build that failed on its
        # first host before nova-compute deleted its ARQs (a failed claim)
        # and binds new ones on the next host: the old bindings belong to
        # a build that is over.
        decisions += [Decision(Action.UNBIND, arq, arq_uuid=arq.uuid)
                      for arq in others]
    for arq_uuid, fields in binds.items():
        arq, group = facts.arqs[arq_uuid]
        decisions.append(_decide_one(arq, group, fields,
                                     facts.regions.get(arq_uuid), policy))
    return decisions


def stop(decisions):
    """The first decision that stops the PATCH before anything is written
    (refuse, move, recheck), or None."""
    return next((d for d in decisions if d.action in bind_db.STOPS), None)


def _decide_one(arq, group, fields, region, policy):
    decision = Decision(Action.BIND, arq, fields, group, region,
                        arq_uuid=arq.uuid)
    if bind_db.is_repeat(arq, fields):
        return _as(decision, Action.REPEAT)
    if arq.state in (arq_states.BOUND, arq_states.BIND_STARTED):
        return _refuse(decision, bind_db.bound_elsewhere(arq, fields))
    if arq.state not in arq_states.BINDABLE:
        return _refuse(decision, exception.ARQBadState(
            uuid=arq.uuid, state=arq.state, action="binding",
            expected=", ".join(arq_states.BINDABLE)))
    if region is None:
        return _refuse(decision, exception.ResourceProviderNotFound(
            rp_uuid=fields["device_rp_uuid"], arq=arq.uuid))
    deployable, device = region.deployable, region.device
    served, kept = _as_kept(arq, group, deployable)
    if kept is not None:
        return refused(decision, kept, policy)
    if region.without_physnet:
        # NOTE(cyborg_lite): Nova would fail to plug the port later.
        return _refuse(decision, exception.NICHandleWithoutPhysnet(
            arq=arq.uuid, deployable=deployable.uuid,
            rp_uuid=fields["device_rp_uuid"],
            handles=exception.some(list(region.without_physnet))))
    decision = dataclasses.replace(decision, group=served,
                                   served=_served_lock(served, deployable))
    wanted = deployable_db.needs_programming(served, deployable)
    enabled = device.status == _ENABLED
    if wanted is None:
        if deployable.state == _READY and enabled:
            return decision
        if not region.locked:
            return _as(decision, Action.RECHECK)
        if (policy.programming and deployable.state == _PROGRAMMING
                and enabled and not deployable_db.asks_content(served)):
            return _as(decision, Action.JOIN)
        return refused(decision, _not_ready(deployable, device), policy)
    if not enabled:
        return refused(decision, _not_ready(deployable, device), policy)
    if not policy.programming:
        return _refuse(decision, exception.ProgrammingUnavailable(
            deployable=deployable.uuid, running=(
                deployable.function_id or deployable.bitstream_id
                or "nothing"),
            arq=arq.uuid, asked=f"{wanted[0]}={wanted[1]}"))
    return _as(decision, Action.PROGRAM)


def refused(decision, cause, policy):
    """What follows the refusal ``cause`` of ``decision``'s region (by the
    plan, or by the database as it wrote): a move to a sibling region when
    one may serve the group, else a refusal of the PATCH."""
    if policy.siblings and isinstance(cause, SIBLING_MAY_SERVE):
        return dataclasses.replace(decision, action=Action.MOVE,
                                   reason=cause)
    return _refuse(decision, cause)


def asked(decision):
    """``(function_id, bitstream_id)`` that a PROGRAM decision loads."""
    key, value = deployable_db.needs_programming(
        decision.group, decision.region.deployable)
    if key == "accel:function_id":
        return value, None
    return None, value


def to_serving_sibling(decision, target):
    """A PROGRAM decision turned into a move to the sibling ``target``
    that serves its group already: binding there spares programming the
    region Nova chose, and keeps that region free for another function."""
    return dataclasses.replace(decision, action=Action.MOVE, target=target)


def _as(decision, action):
    return dataclasses.replace(decision, action=action)


def _refuse(decision, reason):
    return dataclasses.replace(decision, action=Action.REFUSE,
                               reason=reason)


def _not_ready(deployable, device):
    state = deployable.state
    if state == _PROGRAMMING:
        state = "being programmed with " + regions.target_text(
            deployable.target_function_id, deployable.target_bitstream_id)
    elif state == _READY:
        state = f"on a {device.status} device"
    return exception.DeployableNotReady(deployable=deployable.uuid,
                                        state=state)


def _rescheduled(others, binds, instance, arqs):
    """Are ``others`` (bound to ``instance``) left from a build of the
    same project on another host, the PATCH binding it on a new one?"""
    mine = [f for f in binds.values() if f["instance_uuid"] == instance]
    hosts = {f["hostname"] for f in mine}
    projects = {arqs[uuid][0].project_id for uuid, f in binds.items()
                if f["instance_uuid"] == instance}
    return all(a.state == arq_states.BOUND and a.hostname
               and a.hostname not in hosts and a.project_id in projects
               for a in others)


def _as_kept(arq, group, deployable):
    """The group as binding to ``deployable`` serves it, while lookup
    routing keeps the region for a content
    (:mod:`cyborg_lite.scheduling.routing`): a group asking for no
    function gets what the region is kept for (loaded first when it is not
    loaded yet); one asking for something else is refused, so a boot
    scheduled from an older answer never takes a region kept for the boots
    routed to it.

    :returns: ``(group served, None)``, or ``(None, RegionKept)``.
    """
    kept = locks_mod.kept_for(deployable)
    if kept is None:
        return group, None
    if not deployable_db.asks_content(group):
        if kept[0]:
            return {**group, "accel:function_id": kept[0]}, None
        if kept[1]:
            return {**group, "accel:bitstream_id": kept[1]}, None
        return group, None
    allowed = locks_mod.group_allows(group, {kept})
    if inventory.lock_trait(*kept) in allowed:
        return group, None
    asked_for = (group.get("accel:function_id")
                 or group.get("accel:bitstream_id"))
    return None, prog_exception.RegionKept(
        deployable=deployable.uuid, arq=arq.uuid, asked=asked_for,
        kept=regions.target_text(*kept) if any(kept)
        else "boots asking for no function")


def _served_lock(group, deployable):
    """The lock trait of what a bind of ``group`` to ``deployable`` gets:
    the content whose routed lookup it consumes."""
    if group.get("accel:function_id"):
        return inventory.lock_trait(group["accel:function_id"])
    if group.get("accel:bitstream_id"):
        return inventory.lock_trait(bitstream_id=group["accel:bitstream_id"])
    if deployable.state == _PROGRAMMING:
        return inventory.lock_trait(deployable.target_function_id,
                                    deployable.target_bitstream_id)
    return inventory.lock_trait(deployable.function_id,
                                deployable.bitstream_id)
