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


"""Accelerator requests: /v2/accelerator_requests."""

import flask

from cyborg_lite import arq_states as states
from cyborg_lite import binding
from cyborg_lite import exception
from cyborg_lite import policy
from cyborg_lite.api import common
from cyborg_lite.api import schemas
from cyborg_lite.api.schemas import accelerator_requests as schema
from cyborg_lite.api.schemas import device_profiles as dp_schema
from cyborg_lite.db import arqs as arq_db
from cyborg_lite.db import engine as db_engine


def serialize(arq, handle=None):
    """The wire form of an ARQ; ``handle`` is the attach handle it holds."""
    bound = arq.state == states.BOUND and handle is not None
    return {"uuid": arq.uuid, "state": arq.state,
            "device_profile_name": arq.device_profile_name,
            "device_profile_group_id": arq.device_profile_group_id,
            "hostname": arq.hostname,
            "device_rp_uuid": arq.device_rp_uuid,
            "instance_uuid": arq.instance_uuid,
            "project_id": arq.project_id,
            "attach_handle_type": handle.type if bound else "",
            "attach_handle_uuid": handle.uuid if bound else None,
            "attach_handle_info": (binding.attach_handle_info(handle)
                                   if bound else {}),
            "created_at": common.timestamp(arq.created_at),
            "updated_at": common.timestamp(arq.updated_at),
            "links": common.link("accelerator_requests", arq.uuid)}


def _with_handles(session, arqs):
    """``(arqs, {arq id: attach handle})`` of the bound ones."""
    return arqs, arq_db.handles_of(
        session, [a.id for a in arqs if a.state == states.BOUND])


def _authorize(action):
    svc = common.services()
    ctx = common.context()
    policy.authorize(svc.enforcer, f"cyborg:arq:{action}", ctx)
    # NOTE(cyborg_lite): CVE-2026-40214: non-admins only ever see and touch
    # their own project's ARQs.
    scope = None if ctx.is_admin_role else ctx.project_id
    return svc, ctx, scope


def _uuid_param(params, name):
    value = params.get(name)
    if value is not None and not db_engine.is_uuid_like(value):
        raise exception.InvalidParameter(name=name,
                                         reason=f"{value!r} is not a UUID")
    return binding.canonical_uuid(value) if value is not None else None


def list_arqs():
    """GET /v2/accelerator_requests[?instance=&bind_state=resolved]"""
    svc, ctx, scope = _authorize("get_all")
    params = common.query(("instance", "bind_state", "limit", "marker"))
    limit, marker = common.pagination(params)
    instance = _uuid_param(params, "instance")
    bind_state = params.get("bind_state")
    if bind_state is not None and bind_state != "resolved":
        raise exception.InvalidParameter(
            name="bind_state",
            reason=f"only 'resolved' is supported, got {bind_state!r}")
    if instance is not None and marker is None:
        # NOTE(cyborg_lite): Nova's resolve, on every boot: one statement.
        arqs, handles = arq_db.of_instance_with_handles(
            svc.db, instance, scope, limit)
    else:
        arqs, handles = svc.db.read(lambda s: _with_handles(
            s, arq_db.get_all(s, project_id=scope, instance_uuid=instance,
                              limit=limit, marker=marker)))
    if bind_state:
        pending = [a.uuid for a in arqs if a.state not in states.RESOLVED]
        if instance is not None and pending:
            raise exception.Locked(instance=instance,
                                   pending=", ".join(pending))
        page = arqs
        arqs = [a for a in arqs if a.state in states.RESOLVED]
    else:
        page = arqs
    return common.listing("arqs", page, [serialize(a, handles.get(a.id))
                                         for a in arqs])


def show(arq_uuid):
    """GET /v2/accelerator_requests/{uuid}"""
    svc, ctx, scope = _authorize("get_one")
    common.query(())
    if not db_engine.is_uuid_like(arq_uuid):
        raise exception.ARQNotFound(uuids=arq_uuid)
    (arq,), handles = svc.db.read(lambda s: _with_handles(s, [
        arq_db.get(s, binding.canonical_uuid(arq_uuid), scope)]))
    return flask.jsonify(serialize(arq, handles.get(arq.id)))


def create():
    """POST /v2/accelerator_requests {"device_profile_name": dp}"""
    svc, ctx, scope = _authorize("create")
    common.query(())
    body = schemas.validate(schema.CREATE, common.json_body())
    limit = svc.conf.api.max_arqs_per_request
    arqs = arq_db.create_from_profile(
        svc.db, body["device_profile_name"], ctx.project_id,
        dp_schema.group_amount,
        check_total=lambda groups: dp_schema.check_total(groups, limit),
        created_by_service=ctx.is_service)
    return flask.jsonify({"arqs": [serialize(a) for a in arqs]}), 201


def update():
    """PATCH /v2/accelerator_requests: bind or unbind (Nova's form)."""
    svc, ctx, scope = _authorize("update")
    common.query(())
    body = common.json_body()
    _check_count(svc, body, "one PATCH may bind or unbind")
    body = schemas.validate(schema.PATCH, body)
    kind, work = schema.parse_patch(body, common.version(),
                                    ctx.is_admin_role)
    common.require_service("Binding or unbinding accelerator requests")
    if kind == "unbind":
        binding.unbind(svc.db, work, project_id=scope, locks=svc.locks,
                       defer=_after_answer)
        return common.empty(202)
    # NOTE(cyborg_lite): an ARQ bound within this PATCH is resolved when
    # Nova looks, before it waits for events ([nova] notify_instant_binds);
    # the programmer sends the events of those bound later.
    notify = svc.notifier.enabled and svc.conf.nova.notify_instant_binds
    bound = binding.bind(svc.db, work, project_id=scope,
                         programmer=svc.programmer, notify=notify,
                         locks=svc.locks, siblings=svc.siblings,
                         defer=_after_answer)
    response = common.empty(202)
    if bound and notify:
        notifier = svc.notifier
        # NOTE(cyborg_lite): events leave after the reply has been sent, so
        # Nova already knows the instance's host when they arrive.
        instances = {arq: work.get(arq, {}).get("instance_uuid")
                     for arq in bound}
        response.call_on_close(
            lambda: notifier.notify_later(bound, instances))
    return response


def _after_answer(work):
    """Run ``work()`` once the answer (whatever it is, an error too) has
    been sent."""
    @flask.after_this_request
    def _register(response):
        response.call_on_close(work)
        return response


def update_one(arq_uuid):
    """PATCH /v2/accelerator_requests/{uuid}: the openstacksdk/OSC form;
    the body is the same map, the path segment is not needed."""
    return update()


def delete():
    """DELETE /v2/accelerator_requests?arqs=u1,u2 or ?instance=uuid"""
    svc, ctx, scope = _authorize("delete")
    params = common.query(("arqs", "instance"))
    if ("arqs" in params) == ("instance" in params):
        raise exception.Invalid(
            reason="give exactly one of the 'arqs' and 'instance' query "
                   "parameters")
    if "instance" in params:
        instance = _uuid_param(params, "instance")
        common.require_service("Deleting accelerator requests by instance")
        binding.delete(svc.db, instance_uuid=instance, project_id=scope,
                       is_service=True, locks=svc.locks,
                       defer=_after_answer)
        return common.empty(204)
    return _delete_arqs(svc, ctx, scope, params["arqs"].split(","))


def _check_count(svc, arqs, what):
    limit = svc.conf.api.max_arqs_per_request
    if isinstance(arqs, (dict, list)) and len(arqs) > limit:
        raise exception.Invalid(
            reason=f"{len(arqs)} accelerator requests named; {what} at most "
                   f"{limit} ([api] max_arqs_per_request)")


def _delete_arqs(svc, ctx, scope, uuids):
    uuids = [u.strip() for u in uuids if u.strip()]
    _check_count(svc, uuids, "one DELETE may delete")
    if not uuids:
        raise exception.InvalidParameter(name="arqs",
                                         reason="name at least one ARQ")
    valid = [binding.canonical_uuid(u) for u in uuids
             if db_engine.is_uuid_like(u)]
    invalid = [u for u in uuids if not db_engine.is_uuid_like(u)]
    try:
        binding.delete(svc.db, arq_uuids=valid, project_id=scope,
                       is_service=ctx.is_service, locks=svc.locks,
                       defer=_after_answer)
    except exception.ARQNotFound as error:
        invalid = error.message and invalid + [error.kwargs["uuids"]]
    if invalid:
        raise exception.ARQNotFound(uuids=exception.some(invalid))
    return common.empty(204)


def delete_one(arq_uuid):
    """DELETE /v2/accelerator_requests/{uuid}"""
    svc, ctx, scope = _authorize("delete")
    common.query(())
    return _delete_arqs(svc, ctx, scope, [arq_uuid])
