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


"""Deployable attributes: /v2/attributes."""

import flask

from cyborg_lite import exception
from cyborg_lite import policy
from cyborg_lite.api import common
from cyborg_lite.api import schemas
from cyborg_lite.api import validation
from cyborg_lite.api.schemas import attributes as schema
from cyborg_lite.db import attributes as attribute_db
from cyborg_lite.db import engine as db_engine


def serialize(attribute):
    """The wire form; ``deployable_id`` is the deployable's integer id, as
    real Cyborg shows it."""
    return {"uuid": attribute.uuid,
            "deployable_id": attribute.deployable_id,
            "key": attribute.key, "value": attribute.value,
            "created_at": common.timestamp(attribute.created_at),
            "updated_at": common.timestamp(attribute.updated_at),
            "links": common.link("attributes", attribute.uuid)}


def _authorize(action):
    svc = common.services()
    policy.authorize(svc.enforcer, f"cyborg:attribute:{action}",
                     common.context())
    return svc


def list_attributes():
    """GET /v2/attributes[?deployable_id=&key=&limit=&marker=]"""
    svc = _authorize("get_all")
    params = common.query(("deployable_id", "key", "limit", "marker"))
    limit, marker = common.pagination(params)
    deployable = params.get("deployable_id")
    if deployable is not None and not (
            validation.integer_id(deployable) is not None
            or db_engine.is_uuid_like(deployable)):
        raise exception.InvalidParameter(
            name="deployable_id",
            reason=f"{deployable!r} is neither an integer id nor a uuid")
    attributes = attribute_db.get_all(svc.db, deployable=deployable,
                                       key=params.get("key"), limit=limit,
                                       marker=marker)
    return common.listing("attributes", attributes,
                          [serialize(a) for a in attributes])


def show(uuid):
    """GET /v2/attributes/{uuid}"""
    svc = _authorize("get_one")
    common.query(())
    return flask.jsonify(serialize(attribute_db.get(svc.db, uuid)))


def create():
    """POST /v2/attributes {"deployable_id", "key", "value"} (also
    wrapped in ``{"attribute": ...}``)."""
    svc = _authorize("create")
    body = common.json_body()
    if isinstance(body, dict) and list(body) == ["attribute"]:
        # NOTE(cyborg_lite): openstacksdk (and so `openstack accelerator
        # attribute create`) wraps the body in its resource key.
        body = body["attribute"]
    body = schemas.validate(schema.CREATE, body)
    attribute = attribute_db.create(
        svc.db, deployable=body["deployable_id"], key=body["key"],
        value=body["value"])
    return flask.jsonify(serialize(attribute)), 201


def delete(uuid):
    """DELETE /v2/attributes/{uuid}"""
    svc = _authorize("delete")
    common.query(())
    attribute_db.delete(svc.db, uuid)
    return common.empty(204)
