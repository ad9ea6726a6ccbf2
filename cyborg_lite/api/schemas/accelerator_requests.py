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


"""Accelerator request bodies and the bind/unbind patch rules (Nova's
JSON patch of ``PATCH /v2/accelerator_requests``; the API reference,
doc/source/reference/api.rst, "Accelerator requests")."""

import jsonschema

from cyborg_lite import exception
from cyborg_lite.api import microversion
from cyborg_lite.db import models

_UUID = "^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?" \
        "[0-9a-fA-F]{12}$"

#: POST /v2/accelerator_requests (other keys are ignored, as in Cyborg).
#: An empty name is a name no profile has: 404, as in Cyborg.
CREATE = {
    "type": "object",
    "required": ["device_profile_name"],
    "properties": {
        "device_profile_name": {
            "type": "string",
            "maxLength": models.ARQ.device_profile_name.type.length},
    },
}

_OP = {
    "type": "object",
    "required": ["op", "path"],
    "properties": {
        "op": {"enum": ["add", "remove"]},
        "path": {"type": "string"},
        "value": {},
    },
}

#: PATCH /v2/accelerator_requests: {arq_uuid: [op, ...], ...}
PATCH = {
    "type": "object",
    "minProperties": 1,
    "propertyNames": {"pattern": _UUID},
    "additionalProperties": {"type": "array", "minItems": 1, "items": _OP},
}

BIND_FIELDS = ("/hostname", "/device_rp_uuid", "/instance_uuid")
_VALUE_SCHEMAS = {
    "/hostname": {"type": "string", "minLength": 1,
                  "maxLength": models.ARQ.hostname.type.length},
    "/device_rp_uuid": {"type": "string", "pattern": _UUID},
    "/instance_uuid": {"type": "string", "pattern": _UUID},
    "/project_id": {"type": "string", "minLength": 1,
                    "maxLength": models.ARQ.project_id.type.length},
}
_VALUE_VALIDATORS = {path: jsonschema.Draft202012Validator(schema)
                     for path, schema in _VALUE_SCHEMAS.items()}


def parse_patch(body, version, is_admin):
    """Turn a validated PATCH body into binds or unbinds.

    :returns: ``("bind", {arq: {"hostname", "device_rp_uuid",
        "instance_uuid", ["project_id"]}})`` or ``("unbind", [arq, ...])``.
    :raises Invalid: mixed ops, unknown paths, absent fields, bad values.
    :raises NotAcceptable: ``/project_id`` below 2.1.
    :raises Forbidden: ``/project_id`` from a non-admin.
    """
    kinds = set()
    binds, unbinds = {}, []
    for arq, ops in body.items():
        ops_kinds = {op["op"] for op in ops}
        if len(ops_kinds) != 1:
            raise exception.Invalid(
                reason=f"ARQ {arq}: ops must be all 'add' or all 'remove'")
        kind = ops_kinds.pop()
        kinds.add(kind)
        paths = [op["path"] for op in ops]
        for path in paths:
            if path not in BIND_FIELDS + ("/project_id",):
                raise exception.Invalid(
                    reason=f"ARQ {arq}: unknown path {path!r}; allowed: "
                           f"{', '.join(BIND_FIELDS)}, /project_id")
            if paths.count(path) > 1:
                raise exception.Invalid(
                    reason=f"ARQ {arq}: path {path} given twice")
        if "/project_id" in paths:
            if version < microversion.Version("2.1"):
                raise exception.NotAcceptable(
                    reason="/project_id in a bind needs microversion 2.1")
            if not is_admin:
                raise exception.Forbidden(
                    reason="only administrators may bind with /project_id")
        if kind == "remove":
            unbinds.append(arq)
            continue
        missing = [p for p in BIND_FIELDS if p not in paths]
        if missing:
            raise exception.Invalid(
                reason=f"ARQ {arq}: Fields absent in patch: "
                       f"{', '.join(missing)}")
        fields = {}
        for op in ops:
            if "value" not in op:
                raise exception.Invalid(
                    reason=f"ARQ {arq}: op on {op['path']} has no value")
            # NOTE(cyborg_lite): validators are built once;
            # jsonschema.validate() checks the schema itself on every call,
            # which costs ms per bind.
            error = jsonschema.exceptions.best_match(
                _VALUE_VALIDATORS[op["path"]].iter_errors(op["value"]))
            if error is not None:
                raise exception.Invalid(
                    reason=f"ARQ {arq}: {op['path']}: {error.message}")
            fields[op["path"][1:]] = op["value"]
        binds[arq] = fields
    if len(kinds) > 1:
        raise exception.Invalid(
            reason="one PATCH either binds or unbinds; it mixes both")
    if binds:
        return "bind", binds
    return "unbind", unbinds
