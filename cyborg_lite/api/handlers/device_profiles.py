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


"""Device profiles: /v2/device_profiles."""

import flask

from cyborg_lite import exception
from cyborg_lite import policy
from cyborg_lite.api import common
from cyborg_lite.api import schemas
from cyborg_lite.api.schemas import device_profiles as schema
from cyborg_lite.db import device_profiles as profile_db
from cyborg_lite.scheduling import locks
from cyborg_lite.scheduling import routing


def serialize(profile, contents=None, groups=None):
    """The wire form of a device profile.

    :param contents: what regions run (``locks.scheduling_groups``); with
        it, each group asking for a function forbids the lock traits of
        the regions locked to anything else, as Nova's scheduler must read
        it (doc/source/architecture.rst, "Scheduling").
    :param groups: the groups as answered, when already worked out (a
        routed lookup).
    """
    if groups is None:
        groups = profile.groups
        if contents is not None:
            groups = locks.scheduling_groups(groups, contents)
    return {"uuid": profile.uuid, "name": profile.name,
            "description": profile.description, "groups": groups,
            "created_at": common.timestamp(profile.created_at),
            "updated_at": common.timestamp(profile.updated_at),
            "links": common.link("device_profiles", profile.uuid)}


def _authorize(action):
    svc = common.services()
    policy.authorize(svc.enforcer, f"cyborg:device_profile:{action}",
                     common.context())
    return svc


def list_profiles():
    """GET /v2/device_profiles[?name=a,b]: computes, never writes.

    Each group asking for a function forbids the lock traits of the regions
    locked to anything else. Nova's lookup of a boot's profile is then
    recorded and routed by :func:`route_lookup`, the step the route table
    names beside this GET.
    """
    svc = _authorize("get_all")
    params = common.query(("name", "limit", "marker"))
    limit, marker = common.pagination(params)
    names = params["name"].split(",") if "name" in params else None
    profiles = profile_db.get_all(svc.db, names=names, limit=limit,
                                  marker=marker)
    contents = _contents(svc)
    # NOTE(cyborg_lite): what was read, for route_lookup to answer Nova's
    # lookup from without reading it again.
    flask.g.device_profiles = (profiles, contents)
    return common.listing("device_profiles", profiles,
                          [serialize(p, contents) for p in profiles])


def route_lookup(response):
    """After GET /v2/device_profiles: record Nova's lookup and answer it.

    Nova reads the profile of a boot it is about to schedule (one name,
    with a service token) and its scheduler then reads nothing but
    Placement, so what the answer relies on (the lookup counted, the
    regions kept, their lock traits, the traits the groups name) is
    written before the answer leaves
    (:meth:`cyborg_lite.scheduling.routing.Router.answer`). A user's read
    records nothing, so it cannot keep regions from others; a read that
    is not Nova's lookup leaves with the GET's answer.
    """
    svc = common.services()
    lookup = _nova_lookup(svc, response)
    if lookup is None:
        return response
    profile, contents = lookup
    if not svc.locks.ensure_known(profile.groups, contents):
        groups = profile.groups
    else:
        groups = svc.router.answer(
            profile.groups, contents,
            move=routing.is_move(flask.request.user_agent.string))
    return common.listing("device_profiles", [profile],
                          [serialize(profile, groups=groups)])


def _nova_lookup(svc, response):
    """``(profile, what regions run)`` as the GET read them, when the
    request was Nova's lookup (one name, a service token, Placement in the
    deployment) and answered 200; else None."""
    if (response.status_code != 200 or flask.request.method != "GET"
            or svc.router is None
            or svc.locks is None or not svc.locks.enabled
            or not common.context().is_service
            or len(flask.request.args.get("name", ",").split(",")) != 1):
        return None
    profiles, contents = flask.g.get("device_profiles", ((), None))
    if len(profiles) != 1:
        return None
    return profiles[0], contents


def _contents(svc):
    """What regions run (read only); None without Placement."""
    if svc.locks is None or not svc.locks.enabled:
        return None
    return svc.locks.contents()


def show(ident):
    """GET /v2/device_profiles/{uuid or name}: computes, never writes (not
    routed, not recorded).

    Names work at every microversion, not only from 2.2 as in Cyborg: the
    unchanged ``openstack accelerator device profile show NAME`` sends 2.0
    and has no fallback to listing by name (doc/source/reference/api.rst).
    """
    svc = _authorize("get_one")
    common.query(())
    profile = profile_db.get(svc.db, ident)
    return flask.jsonify({"device_profile": serialize(profile,
                                                      _contents(svc))})


def create():
    """POST /v2/device_profiles with a list of exactly one profile."""
    svc = _authorize("create")
    body = schemas.validate(schema.CREATE, common.json_body())[0]
    schema.check_description(body.get("description"))
    groups = schema.normalize_groups(body["groups"])
    schema.check_groups(groups)
    schema.check_total(groups, svc.conf.api.max_arqs_per_request)
    profile = profile_db.create(
        svc.db, name=body["name"], groups=groups,
        description=body.get("description"), uuid=body.get("uuid"))
    return flask.jsonify(serialize(profile)), 201


def delete(ident):
    """DELETE /v2/device_profiles/{uuid or name[,name...]}"""
    svc = _authorize("delete")
    common.query(())
    profile_db.delete(svc.db, [i for i in ident.split(",") if i])
    return common.empty(204)


def delete_by_value():
    """DELETE /v2/device_profiles?value=n1,n2 (python-cyborgclient form)."""
    svc = _authorize("delete")
    params = common.query(("value",))
    if not params.get("value"):
        raise exception.InvalidParameter(
            name="value", reason="name the profiles to delete")
    profile_db.delete(
        svc.db, [i for i in params["value"].split(",") if i])
    return common.empty(204)
