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

"""The body of ``PATCH /v2/deployables/{uuid}/program``."""

import pytest

from cyborg_lite import exception
from cyborg_lite.api import schemas
from cyborg_lite.api.schemas import deployables as schema


def _parse(body):
    return schema.parse_program(schemas.validate(schema.PROGRAM, body))


def test_sdk_form_loads_an_image():
    image = "9a3c1e2f-0000-4000-8000-000000000001"
    body = [{"path": "/program", "op": "replace",
             "value": [{"image_uuid": image}]}]
    assert _parse(body) == (None, image, False)


def test_function_id_and_remove_forms():
    assert _parse([{"path": "/program", "op": "add",
                    "value": [{"function_id": "nlb0"}]}]) == (
        "nlb0", None, False)
    assert _parse([{"path": "/program", "op": "remove"}]) == (
        None, None, True)


@pytest.mark.parametrize("body, message", [
    ([{"path": "/program", "op": "move", "value": [{"function_id": "x"}]}],
     "body[0].op"),
    ([{"path": "program", "op": "add", "value": [{"function_id": "x"}]}],
     "body[0].path"),
    ([{"path": "/program", "op": "add",
       "value": [{"image_uuid": "a", "function_id": "b"}]}],
     "body[0].value[0]"),
    ([], "body"),
])
def test_malformed_body_is_400_naming_the_field(body, message):
    with pytest.raises(exception.Invalid) as info:
        _parse(body)
    assert message in info.value.message


@pytest.mark.parametrize("path, message", [
    ("/name", "/name is an internal attribute"),
    ("/bitstream", "only /program can be patched"),
])
def test_other_paths_are_refused(path, message):
    with pytest.raises(ValueError, match=message):
        _parse([{"path": path, "op": "replace",
                 "value": [{"function_id": "x"}]}])


def test_replace_needs_a_value():
    with pytest.raises(ValueError, match="needs a value"):
        _parse([{"path": "/program", "op": "replace"}])
