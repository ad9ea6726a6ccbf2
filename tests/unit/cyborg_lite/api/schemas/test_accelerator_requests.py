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


"""Bind/unbind patch rules: what the schema lets through."""

import uuid

import pytest

from cyborg_lite import exception
from cyborg_lite.api import microversion
from cyborg_lite.api import schemas
from cyborg_lite.api.schemas import accelerator_requests as arq

V20 = microversion.Version("2.0")
V21 = microversion.Version("2.1")
ARQ = str(uuid.uuid4())
RP = str(uuid.uuid4())
INSTANCE = str(uuid.uuid4())


def _bind_ops(**extra):
    values = {"/hostname": "h", "/device_rp_uuid": RP,
              "/instance_uuid": INSTANCE, **extra}
    return [{"op": "add", "path": p, "value": v} for p, v in values.items()]


def test_bind_is_parsed_into_fields():
    kind, work = arq.parse_patch({ARQ: _bind_ops()}, V20, False)
    assert kind == "bind"
    assert work == {ARQ: {"hostname": "h", "device_rp_uuid": RP,
                          "instance_uuid": INSTANCE}}


def test_unbind_is_parsed_into_uuids():
    ops = [{"op": "remove", "path": "/hostname"}]
    assert arq.parse_patch({ARQ: ops}, V20, False) == ("unbind", [ARQ])


def test_mixing_binds_and_unbinds_in_one_patch_is_invalid():
    other = str(uuid.uuid4())
    with pytest.raises(exception.Invalid):
        arq.parse_patch({ARQ: _bind_ops(),
                         other: [{"op": "remove", "path": "/hostname"}]},
                        V20, False)


def test_absent_fields_are_named():
    with pytest.raises(exception.Invalid) as info:
        arq.parse_patch({ARQ: _bind_ops()[:1]}, V20, False)
    assert "/device_rp_uuid" in info.value.message
    assert "/instance_uuid" in info.value.message


def test_project_id_needs_2_1_then_admin():
    body = {ARQ: _bind_ops(**{"/project_id": "p"})}
    with pytest.raises(exception.NotAcceptable):
        arq.parse_patch(body, V20, True)
    with pytest.raises(exception.Forbidden):
        arq.parse_patch(body, V21, False)
    kind, work = arq.parse_patch(body, V21, True)
    assert work[ARQ]["project_id"] == "p"


def test_patch_schema_rejects_missing_op_and_non_uuid_keys():
    for body in ({ARQ: [{"path": "/hostname"}]},
                 {"not-a-uuid": _bind_ops()}, {}, {ARQ: []}):
        with pytest.raises(exception.Invalid):
            schemas.validate(arq.PATCH, body)
