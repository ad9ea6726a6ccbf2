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


"""Device profiles over HTTP: create, show, list and delete, and what a
body may hold."""

import json
import uuid

import pytest

from tests.fixtures.cyborg import ADMIN
from tests.fixtures.cyborg import headers
from tests.fixtures.cyborg import MEMBER
from tests.fixtures.cyborg import NOVA

DPS = "/v2/device_profiles"


def fault(response):
    return json.loads(response.get_json()["error_message"])["faultstring"]


def _post(cyborg, body, caller=ADMIN):
    return cyborg.client.post(DPS, headers=caller, json=body)


def test_create_one_element_list_gives_201_flat(cyborg):
    dp_uuid = str(uuid.uuid4())
    response = _post(cyborg, [{"name": "fpga-gzip", "uuid": dp_uuid,
                               "description": "gzip",
                               "groups": [{"resources:FPGA": 1,
                                           "accel:function_id": "gzip"}]}])
    assert response.status_code == 201
    body = response.get_json()
    assert body["uuid"] == dp_uuid and body["name"] == "fpga-gzip"
    # values are stored as strings
    assert body["groups"] == [{"resources:FPGA": "1",
                               "accel:function_id": "gzip"}]
    assert body["links"][0]["href"].endswith(f"/v2/device_profiles/{dp_uuid}")


@pytest.mark.parametrize("body, needle", [
    ([{"groups": [{"resources:FPGA": "1"}]}], "name"),
    ([{"name": "x"}], "groups"),
    ([{"name": "x", "groups": []}], "groups"),
    ([{"name": "bad name!", "groups": [{"resources:FPGA": "1"}]}], "name"),
    ([{"name": "x", "groups": [{"resources:FPGA": "1"}]}] * 2, "body"),
    ({"name": "x", "groups": [{"resources:FPGA": "1"}]}, "array"),
    ([{"name": "x", "groups": [{"foo:bar": "1"}]}], "resources:"),
    ([{"name": "x", "groups": [{"resources:FOO": "1"}]}], "FOO"),
    ([{"name": "x", "groups": [{"resources:FPGA": "one"}]}], "integer"),
    ([{"name": "x", "groups": [{"resources:FPGA": "1",
                                "trait:OWNER_CYBORG": "required"}]}],
     "CUSTOM_"),
    ([{"name": "x", "groups": [{"resources:FPGA": "1",
                                "trait:CUSTOM_X": "maybe"}]}], "forbidden"),
])
def test_bad_profiles_are_400_naming_the_problem(cyborg, body, needle):
    response = _post(cyborg, body)
    assert response.status_code == 400
    assert needle in fault(response)


def test_custom_resource_class_and_whitespace_are_accepted(cyborg):
    response = _post(cyborg, [{"name": "qat", "groups": [
        {"resources: CUSTOM_QAT ": "2", "trait:CUSTOM_QAT_V2": "forbidden"}]}])
    assert response.status_code == 201


def test_keys_are_stored_and_returned_as_cyborg_normalises_them(cyborg):
    """A profile exported from Cyborg (or typed from its docs) with spaces
    around the names after the colon is recreated with its uuid and read
    back, everywhere, in the normalised form real Cyborg stores."""
    dp_uuid = str(uuid.uuid4())
    response = _post(cyborg, [{"name": "spaced", "uuid": dp_uuid, "groups": [
        {"resources: CUSTOM_ACCELERATOR_FOO ": "1",
         "trait: CUSTOM_X ": "forbidden",
         "accel: function_id": "abc"}]}])
    assert response.status_code == 201, response.get_json()
    expected = [{"resources:CUSTOM_ACCELERATOR_FOO": "1",
                 "trait:CUSTOM_X": "forbidden", "accel:function_id": "abc"}]
    assert response.get_json()["groups"] == expected
    assert response.get_json()["uuid"] == dp_uuid
    listed = cyborg.client.get(DPS + "?name=spaced", headers=NOVA).get_json()
    assert listed["device_profiles"][0]["groups"] == expected
    shown = cyborg.client.get(f"{DPS}/{dp_uuid}", headers=MEMBER).get_json()
    assert shown["device_profile"]["groups"] == expected
    # What Nova builds its Placement request groups from.
    from accel_tools import request_groups
    group, = request_groups.request_groups(
        listed["device_profiles"][0]["groups"])
    assert group.resources == {"CUSTOM_ACCELERATOR_FOO": 1}
    assert group.forbidden_traits == {"CUSTOM_X"}


def test_two_keys_meaning_the_same_are_400(cyborg):
    response = _post(cyborg, [{"name": "twice", "groups": [
        {"resources:FPGA": "1", "resources: FPGA": "2"}]}])
    assert response.status_code == 400
    assert "'resources:FPGA'" in fault(response)


def test_duplicate_name_is_409(cyborg):
    body = [{"name": "dup", "groups": [{"resources:FPGA": "1"}]}]
    assert _post(cyborg, body).status_code == 201
    response = _post(cyborg, body)
    assert response.status_code == 409
    assert "dup" in fault(response)


@pytest.mark.parametrize("name", ["", "x" * 256], ids=["empty", "256"])
def test_empty_or_overlong_name_is_400_naming_it(cyborg, name):
    response = _post(cyborg, [{"name": name,
                               "groups": [{"resources:FPGA": "1"}]}])
    assert response.status_code == 400
    assert "name" in fault(response)


def test_taken_uuid_is_409_naming_the_uuid_not_the_free_name(cyborg):
    body = [{"name": "first", "groups": [{"resources:FPGA": "1"}]}]
    response = _post(cyborg, body)
    assert response.status_code == 201
    taken = response.get_json()["uuid"]
    response = _post(cyborg, [dict(body[0], name="second", uuid=taken)])
    assert response.status_code == 409
    assert fault(response) == (f"Device profile with uuid {taken} already "
                               "exists.")


def test_create_needs_admin(cyborg):
    body = [{"name": "x", "groups": [{"resources:FPGA": "1"}]}]
    assert _post(cyborg, body, caller=MEMBER).status_code == 403


def test_list_by_name_returns_exactly_that_profile(cyborg):
    a = cyborg.create_profile([{"resources:FPGA": "1"}], name="a")
    cyborg.create_profile([{"resources:PGPU": "1"}], name="b")
    cyborg.create_profile([{"resources:VGPU": "1"}], name="c")
    body = cyborg.client.get(f"{DPS}?name=a", headers=NOVA).get_json()
    assert body == {"device_profiles": [a]}
    names = [p["name"] for p in cyborg.client.get(
        f"{DPS}?name=a,c", headers=NOVA).get_json()["device_profiles"]]
    assert names == ["a", "c"]


def test_get_by_uuid_or_name_is_wrapped_at_every_microversion(cyborg):
    """Real Cyborg answers a name below 2.2 with 406; the unchanged CLI
    (which sends 2.0 and has no find fallback) then cannot show a profile
    by name. cyborg_lite answers names at every microversion."""
    profile = cyborg.create_profile([{"resources:FPGA": "1"}], name="n")
    response = cyborg.client.get(f"{DPS}/{profile['uuid']}", headers=NOVA)
    assert response.get_json() == {"device_profile": profile}
    for version in (None, "2.0", "2.1", "2.2", "2.3"):
        response = cyborg.client.get(
            f"{DPS}/n", headers=headers(service=True, version=version))
        assert response.status_code == 200, version
        assert response.get_json() == {"device_profile": profile}
    for missing in (str(uuid.uuid4()), "no-such-profile"):
        for version in ("2.0", "2.2"):
            response = cyborg.client.get(
                f"{DPS}/{missing}", headers=headers(service=True,
                                                    version=version))
            assert response.status_code == 404
            assert missing in fault(response)


def test_delete_by_uuid_names_and_value(cyborg):
    a = cyborg.create_profile([{"resources:FPGA": "1"}], name="a")
    cyborg.create_profile([{"resources:FPGA": "1"}], name="b")
    cyborg.create_profile([{"resources:FPGA": "1"}], name="c")
    assert cyborg.client.delete(f"{DPS}/{a['uuid']}",
                                headers=ADMIN).status_code == 204
    assert cyborg.client.delete(f"{DPS}/b", headers=ADMIN).status_code == 204
    assert cyborg.client.delete(f"{DPS}?value=c",
                                headers=ADMIN).status_code == 204
    assert cyborg.client.get(DPS, headers=ADMIN).get_json() == {
        "device_profiles": []}
    assert cyborg.client.delete(f"{DPS}/a", headers=ADMIN).status_code == 404


def test_delete_in_use_is_409_until_arqs_are_gone(cyborg):
    profile = cyborg.create_profile([{"resources:FPGA": "1"}], name="used")
    arq = cyborg.create_arqs("used")[0]["uuid"]
    response = cyborg.client.delete(f"{DPS}/used", headers=ADMIN)
    assert response.status_code == 409
    assert "used" in fault(response)
    cyborg.client.delete(f"/v2/accelerator_requests/{arq}", headers=NOVA)
    assert cyborg.client.delete(f"{DPS}/{profile['uuid']}",
                                headers=ADMIN).status_code == 204


def test_limit_and_marker(cyborg):
    names = [cyborg.create_profile([{"resources:FPGA": "1"}])["name"]
             for _ in range(3)]
    page = cyborg.client.get(f"{DPS}?limit=2", headers=ADMIN).get_json()
    assert [p["name"] for p in page["device_profiles"]] == names[:2]
    marker = page["device_profiles"][-1]["uuid"]
    rest = cyborg.client.get(f"{DPS}?marker={marker}",
                             headers=ADMIN).get_json()
    assert [p["name"] for p in rest["device_profiles"]] == names[2:]
