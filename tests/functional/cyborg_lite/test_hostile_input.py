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

"""Malformed and oversized input on every database: a 4xx naming what is
wrong, never a 500, nothing stored; and no answer that tells "another
project's" from "missing" (issue 13 §1, §1b, §2)."""

import json
import uuid

import pytest

from tests.fixtures.cyborg import ADMIN
from tests.fixtures.cyborg import FPGA_REGION0_RP
from tests.fixtures.cyborg import headers
from tests.fixtures.cyborg import MEMBER
from tests.fixtures.cyborg import NOVA
from tests.fixtures.cyborg import OTHER

DPS = "/v2/device_profiles"
ARQS = "/v2/accelerator_requests"
OTHER_NOVA = headers(project="p2", service=True)


@pytest.fixture
def api(cyborg_on_each_db):
    """cyborg_lite on each database (tests.fixtures.cyborg)."""
    return cyborg_on_each_db


def _fault(response):
    return json.loads(response.get_json()["error_message"])["faultstring"]


def _nest(depth, leaf="x"):
    return "[" * depth + json.dumps(leaf) + "]" * depth


def _profile(name="p", **group):
    return [{"name": name, "groups": [group or {"resources:FPGA": "1"}]}]


DEEP = [
    (DPS, _nest(1500)),
    (DPS, '[{"name": "p", "groups": [' + _nest(1200, {}) + ']}]'),
    (ARQS, '{"device_profile_name": ' + _nest(2000) + '}'),
    (DPS, '[{"name": "p", "groups": [{"resources:FPGA": '
          + _nest(1000) + '}]}]'),
]


@pytest.mark.parametrize("path, raw", DEEP)
def test_over_deep_json_is_400(api, path, raw):
    response = api.client.post(path, headers=ADMIN, data=raw,
                               content_type="application/json")
    assert response.status_code == 400
    assert "nested deeper than 32 levels" in _fault(response)


def test_deep_bind_value_is_400(api):
    arq = api.create_arqs(api.create_profile([{"resources:FPGA": "1"}])
                          ["name"])[0]["uuid"]
    raw = ('{"%s": [{"op": "add", "path": "/hostname", "value": %s}]}'
           % (arq, _nest(1500)))
    response = api.client.patch(ARQS, headers=NOVA, data=raw,
                                content_type="application/json")
    assert response.status_code == 400


UNSTORABLE = ["\ud800", "dp\udfff", "a\u0000b"]


@pytest.mark.parametrize("text", UNSTORABLE)
def test_unstorable_strings_are_400_naming_the_field(api, text):
    calls = [
        (DPS, [{"name": text, "groups": [{"resources:FPGA": "1"}]}],
         "body[0].name"),
        (DPS, [{"name": "p", "description": text,
                "groups": [{"resources:FPGA": "1"}]}], "body[0].description"),
        (DPS, [{"name": "p", "groups": [{"resources:FPGA": "1",
                                         "accel:" + text: "x"}]}], "key"),
        (DPS, [{"name": "p", "groups": [{"resources:FPGA": "1",
                                         "accel:function_id": text}]}],
         "accel:function_id"),
        ("/v2/attributes", {"deployable_id": 1, "key": text, "value": "v"},
         "body.key"),
        ("/v2/attributes", {"deployable_id": 1, "key": "k", "value": text},
         "body.value"),
    ]
    for path, body, where in calls:
        raw = json.dumps(body)  # escapes: \\ud800, \\u0000
        response = api.client.post(path, headers=ADMIN, data=raw,
                                   content_type="application/json")
        assert response.status_code == 400, (path, body)
        assert where in _fault(response), _fault(response)
    assert api.client.get(DPS, headers=ADMIN).get_json() == {
        "device_profiles": []}


@pytest.mark.parametrize("text", UNSTORABLE)
def test_unstorable_bind_hostname_is_400(api, text):
    arq = api.create_arqs(api.create_profile([{"resources:FPGA": "1"}])
                          ["name"])[0]["uuid"]
    response = api.bind([arq], FPGA_REGION0_RP, str(uuid.uuid4()),
                        host=text)
    assert response.status_code == 400
    assert "hostname" in _fault(response) or "value" in _fault(response)


@pytest.mark.parametrize("query", [
    "?name=%00", "?name=a%00b", "?marker=%00", "?limit=%C2%B2",
])
def test_unstorable_query_values_are_400(api, query):
    response = api.client.get(DPS + query, headers=ADMIN)
    assert response.status_code == 400


@pytest.mark.parametrize("ident", ["\u00b2", "9223372036854775808",
                                   str(10 ** 30), "-1", 9223372036854775808,
                                   10 ** 30, -5])
def test_ids_that_only_look_like_ids_are_400(api, ident):
    response = api.client.post("/v2/attributes", headers=ADMIN, json={
        "deployable_id": ident, "key": "k", "value": "v"})
    assert response.status_code == 400, response.get_data(as_text=True)
    if isinstance(ident, str):
        query = "?deployable_id=" + (
            "%C2%B2" if ident == "\u00b2" else ident)
        response = api.client.get("/v2/attributes" + query, headers=ADMIN)
        assert response.status_code == 400, query


def test_request_body_size_is_limited(api):
    big = "x" * (200 * 1024)
    response = api.client.post(DPS, headers=ADMIN, json=[
        {"name": "p", "description": big,
         "groups": [{"resources:FPGA": "1"}]}])
    assert response.status_code == 413


def test_one_patch_may_not_name_thousands_of_arqs(api):
    body = {str(uuid.uuid4()): [{"op": "remove", "path": "/hostname"}]
            for _ in range(1000)}
    response = api.client.patch(ARQS, headers=NOVA, json=body)
    assert response.status_code == 400
    assert "max_arqs_per_request" in _fault(response)
    uuids = ",".join(str(uuid.uuid4()) for _ in range(40))
    response = api.client.delete(f"{ARQS}?arqs={uuids}", headers=NOVA)
    assert response.status_code == 404
    assert _fault(response).count("-") < 5 * 4 + 10  # five uuids named
    assert "and 35 more" in _fault(response)


@pytest.mark.parametrize("amount", ["5000", "99999999999999999999",
                                    10 ** 20])
def test_profile_amounts_are_bounded(api, amount):
    response = api.client.post(DPS, headers=ADMIN,
                               json=_profile(**{"resources:FPGA": amount}))
    assert response.status_code == 400
    assert ("max_arqs_per_request" in _fault(response)
            or "64-bit" in _fault(response))


@pytest.mark.parametrize("amount", ["\u00b2", "1_0", "1.5", True])
def test_amounts_are_ascii_integers(api, amount):
    response = api.client.post(DPS, headers=ADMIN,
                               json=_profile(**{"resources:FPGA": amount}))
    assert response.status_code == 400


def test_arq_creation_checks_the_bound_again(api):
    """A profile stored before the bound was lowered (or imported) still
    cannot create more ARQs than one request may."""
    name = api.create_profile([{"resources:FPGA": "8"}])["name"]
    api.conf.set_override("max_arqs_per_request", 4, group="api")
    response = api.client.post(ARQS, headers=NOVA,
                               json={"device_profile_name": name})
    assert response.status_code == 400
    assert "asks for 8 accelerator requests" in _fault(response)
    assert api.client.get(ARQS, headers=ADMIN).get_json()["arqs"] == []


def test_lists_page_with_next_links_and_never_cut_silently(api):
    name = api.create_profile([{"resources:FPGA": "5"}])["name"]
    for _ in range(3):
        api.create_arqs(name, caller=MEMBER)
    api.conf.set_override("max_limit", 4, group="api")
    seen, url = [], ARQS
    while url:
        response = api.client.get(url, headers=MEMBER)
        assert response.status_code == 200
        body = response.get_json()
        seen += [a["uuid"] for a in body["arqs"]]
        links = body.get("arqs_links", [])
        url = links[0]["href"].replace("http://localhost", "") if links \
            else None
        if url:
            assert response.headers["Link"].endswith('; rel="next"')
    assert len(seen) == len(set(seen)) == 15
    # A page that ends the list has no link; exact lists stay exact.
    body = api.client.get(DPS + f"?name={name}", headers=MEMBER).get_json()
    assert body == {"device_profiles": [body["device_profiles"][0]]}


def test_a_marker_of_another_project_is_like_a_missing_one(api):
    name = api.create_profile([{"resources:FPGA": "1"}])["name"]
    theirs = api.create_arqs(name, caller=OTHER)[0]["uuid"]
    missing = str(uuid.uuid4())
    answers = []
    for marker in (theirs, missing):
        response = api.client.get(f"{ARQS}?marker={marker}", headers=MEMBER)
        answers.append((response.status_code,
                        _fault(response).replace(marker, "M")))
    assert answers[0] == answers[1]
    assert answers[0][0] == 400


def test_bind_error_names_no_arq_of_another_project(api):
    name = api.create_profile([{"resources:FPGA": "1"}])["name"]
    instance = str(uuid.uuid4())
    theirs = api.create_arqs(name, caller=OTHER_NOVA)[0]["uuid"]
    assert api.bind([theirs], FPGA_REGION0_RP, instance,
                    caller=OTHER_NOVA).status_code == 202
    mine = api.create_arqs(name)[0]["uuid"]
    response = api.bind([mine], FPGA_REGION0_RP, instance)
    assert response.status_code == 400
    assert theirs not in _fault(response)
    assert "already has bound accelerator requests" in _fault(response)


@pytest.mark.parametrize("method, path", [
    ("get", ARQS + "/{uuid}"), ("delete", ARQS + "/{uuid}"),
    ("delete", ARQS + "?arqs={uuid}"),
])
def test_other_projects_arqs_answer_like_missing_ones(api, method, path):
    name = api.create_profile([{"resources:FPGA": "1"}])["name"]
    theirs = api.create_arqs(name, caller=OTHER)[0]["uuid"]
    missing = str(uuid.uuid4())
    answers = []
    for arq in (theirs, missing):
        response = getattr(api.client, method)(path.format(uuid=arq),
                                               headers=MEMBER)
        answers.append((response.status_code,
                        _fault(response).replace(arq, "U")))
    assert answers[0] == answers[1]
    assert answers[0][0] == 404
    # and theirs is still there
    assert api.client.get(f"{ARQS}/{theirs}", headers=OTHER).status_code \
        == 200


# Round two (issue 21 §5): every value is bounded by what the database can
# store, checked before it is converted or stored.

MANY_DIGITS = "7" * 5000


def _post_raw(api, path, body, caller=ADMIN):
    """POST ``body`` as UTF-8 JSON (not \\u-escaped, as clients send)."""
    return api.client.post(path, headers=caller,
                           data=json.dumps(body, ensure_ascii=False)
                           .encode("utf-8"),
                           content_type="application/json")


@pytest.mark.parametrize("method, path, body", [
    ("post", DPS, _profile(**{"resources:FPGA": MANY_DIGITS})),
    ("post", "/v2/attributes",
     {"deployable_id": MANY_DIGITS, "key": "k", "value": "v"}),
    ("get", "/v2/attributes?deployable_id=" + MANY_DIGITS, None),
    ("get", DPS + "?limit=" + MANY_DIGITS, None),
])
def test_thousands_of_digits_are_400(api, method, path, body):
    response = getattr(api.client, method)(path, headers=ADMIN, json=body)

    assert response.status_code == 400, response.get_data(as_text=True)
    assert api.client.get(DPS, headers=ADMIN).get_json()[
        "device_profiles"] == []


@pytest.mark.parametrize("key, longest", [
    ("accel:function_id", 255),
    ("accel:bitstream_id", 36),
])
def test_group_values_are_bounded_by_their_columns(api, key, longest):
    too_long = _post_raw(api, DPS, _profile(
        "long", **{"resources:FPGA": "1", key: "é" * (longest + 1)}))
    fits = _post_raw(api, DPS, _profile(
        "fits", **{"resources:FPGA": "1", key: "é" * longest}))

    assert too_long.status_code == 400
    assert (f"{longest + 1} characters, longer than the {longest} "
            "characters the database stores") in _fault(too_long)
    assert fits.status_code == 201, fits.get_data(as_text=True)
    assert fits.get_json()["groups"][0][key] == "é" * longest


def test_resource_class_and_trait_names_are_bounded(api):
    long_name = "CUSTOM_" + "A" * 249
    for key in (f"resources:{long_name}", f"trait:{long_name}"):
        group = {"resources:FPGA": "1", key: "required"}
        if key.startswith("resources:"):
            group = {key: "1"}
        response = api.client.post(DPS, headers=ADMIN, json=_profile(
            **group))
        assert response.status_code == 400, key
        assert "256 characters" in _fault(response)


def test_description_is_bounded_in_bytes(api):
    """MariaDB's TEXT holds 65,535 bytes: 30,000 "€" (90,000 bytes) are
    refused, 21,845 (65,535 bytes) are stored on every database."""
    refused = _post_raw(api, DPS, [{"name": "euro", "description":
                                    "€" * 30000,
                                    "groups": [{"resources:FPGA": "1"}]}])
    stored = _post_raw(api, DPS, [{"name": "euro", "description":
                                   "€" * 21845,
                                   "groups": [{"resources:FPGA": "1"}]}])

    assert refused.status_code == 400
    assert "90000 bytes, longer than the 65535 bytes" in _fault(refused)
    assert stored.status_code == 201, stored.get_data(as_text=True)
    shown = api.client.get(DPS + "/euro", headers=ADMIN).get_json()
    assert shown["device_profile"]["description"] == "€" * 21845


@pytest.mark.parametrize("twin", [
    "resources:\u00a0FPGA", "resources:\u3000FPGA", "resources:\tFPGA",
    "resources:FPGA\u2003", "\uff52esources:FPGA", "resources:ＦＰＧＡ",
])
def test_look_alike_group_keys_are_one_key(api, twin):
    response = api.client.post(DPS, headers=ADMIN, json=_profile(
        **{"resources:FPGA": "1", twin: "1"}))

    assert response.status_code == 400
    assert "both mean 'resources:FPGA'" in _fault(response)


def test_composed_and_decomposed_accents_are_one_key(api):
    response = api.client.post(DPS, headers=ADMIN, json=_profile(
        **{"resources:FPGA": "1", "accel:caf\u00e9": "x",
           "accel:cafe\u0301": "y"}))

    assert response.status_code == 400
    assert "both mean" in _fault(response)


def test_a_look_alike_key_alone_is_stored_normalised(api):
    response = api.client.post(DPS, headers=ADMIN, json=_profile(
        **{"resources:\u00a0FPGA": "1", "accel:cafe\u0301": "x"}))

    assert response.status_code == 201
    assert response.get_json()["groups"] == [
        {"resources:FPGA": "1", "accel:caf\u00e9": "x"}]
