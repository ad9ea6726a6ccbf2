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


"""Deployables (regions or whole cards): /v2/deployables."""

import json

import flask

from cyborg_lite import exception
from cyborg_lite import policy
from cyborg_lite.api import common
from cyborg_lite.api import microversion
from cyborg_lite.api import schemas
from cyborg_lite.api.schemas import deployables as schema
from cyborg_lite.db import attributes as attribute_db
from cyborg_lite.db import deployables as deployable_db
from cyborg_lite.db import engine as db_engine
from cyborg_lite.programming import exception as prog_exception


def serialize(deployable, attributes):
    """The wire form; ``attributes_list`` is a JSON string, as in Cyborg;
    ``state`` (the region's) from microversion 2.4."""
    body = {"uuid": deployable.uuid, "parent_id": deployable.parent_id,
            "root_id": deployable.root_id, "name": deployable.name,
            "num_accelerators": deployable.num_accelerators,
            "device_id": deployable.device_id,
            "attributes_list": json.dumps(
                [{key: value} for key, value in attributes]),
            "rp_uuid": deployable.rp_uuid,
            "driver_name": deployable.driver_name,
            "bitstream_id": deployable.bitstream_id,
            "created_at": common.timestamp(deployable.created_at),
            "updated_at": common.timestamp(deployable.updated_at),
            "links": common.link("deployables", deployable.uuid,
                                 bookmark=True)}
    if common.version() >= microversion.Version("2.4"):
        body["state"] = deployable.state
    return body


def _serialize_all(db, deployables):
    attrs = db.read(lambda s: attribute_db.of_deployables(
        s, [d.id for d in deployables]))
    return [serialize(d, attrs.get(d.id, [])) for d in deployables]


def _authorize(action):
    svc = common.services()
    policy.authorize(svc.enforcer, f"cyborg:deployable:{action}",
                     common.context())
    return svc


def list_deployables():
    """GET /v2/deployables[?rp_uuid=&name=&limit=&marker=]"""
    svc = _authorize("get_all")
    params = common.query(("rp_uuid", "name", "limit", "marker"))
    limit, marker = common.pagination(params)
    deployables = deployable_db.get_all(
        svc.db, rp_uuid=params.get("rp_uuid"), name=params.get("name"),
        limit=limit, marker=marker)
    return common.listing("deployables", deployables,
                          _serialize_all(svc.db, deployables))


def show(uuid):
    """GET /v2/deployables/{uuid}"""
    svc = _authorize("get_one")
    common.query(())
    if not db_engine.is_uuid_like(uuid):
        raise exception.DeployableNotFound(ident=uuid)
    return flask.jsonify(_serialize_all(
        svc.db, [deployable_db.get(svc.db, uuid)])[0])


def program(uuid):
    """PATCH /v2/deployables/{uuid}/program (admin).

    Loads an image (``image_uuid``) or function into the region, or resets
    it (``op: remove``), waiting for the agent's confirmation. Unlike real
    Cyborg it records the function and updates the region's function trait.
    Refused (409) while any handle of the region (of the whole card for a
    ``single`` device) is in use or the region is being programmed.
    """
    svc = _authorize("program")
    common.query(())
    body = schemas.validate(schema.PROGRAM, common.json_body())
    try:
        function_id, bitstream_id, reset = schema.parse_program(body)
    except ValueError as error:
        raise exception.Invalid(reason=str(error))
    if not db_engine.is_uuid_like(uuid):
        raise exception.DeployableNotFound(ident=uuid)
    if svc.programmer is None:
        raise exception.Conflict(reason="programming is not available in "
                                        "this API process")
    outcome = svc.programmer.program(uuid, function_id=function_id,
                                     bitstream_id=bitstream_id, reset=reset)
    if not outcome.ok:
        raise prog_exception.ProgrammingFailed(reason=outcome.error)
    return flask.jsonify(_serialize_all(
        svc.db, [deployable_db.get(svc.db, uuid)])[0])
