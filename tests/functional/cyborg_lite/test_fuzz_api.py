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

"""Property-based fuzz of every route (hypothesis), on sqlite, MariaDB and
PostgreSQL, bounded in examples: whatever the body, query and headers,

- the answer is never a 5xx;
- what a 2xx stored can be read back (the lists still answer 200);
- another project's object answers exactly like a missing one.
"""

import json
from urllib import parse
import uuid

from hypothesis import given
from hypothesis import HealthCheck
from hypothesis import settings
from hypothesis import strategies as st
import pytest

from tests.fixtures.cyborg import ADMIN
from tests.fixtures.cyborg import headers

EXAMPLES = 150
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])

NASTY = st.sampled_from([
    "", " ", "\x00", "\ud800", "dp\udfff", "\u00b2", "9223372036854775808",
    "-1", "0", "1" * 300, "resources:FPGA", "trait:CUSTOM_X", "accel: x",
    "null", "../../etc", "%00", "latest", "2.9", str(uuid.uuid4()),
    "required", "forbidden", "/hostname", "add", "remove",
    # round two: digits past int()'s limit, strings past their column in
    # characters or (MariaDB's TEXT) bytes, look-alike keys.
    "7" * 5000, "\u00e9" * 256, "\u20ac" * 22000, "\u00a0FPGA", "\u3000",
    "\tFPGA", "cafe\u0301", "caf\u00e9"])
STRINGS = st.one_of(NASTY, st.text(max_size=20))
SCALARS = st.one_of(st.none(), st.booleans(), STRINGS,
                    st.integers(min_value=-2 ** 70, max_value=2 ** 70),
                    st.floats(allow_nan=False, allow_infinity=False))
JSON = st.recursive(
    SCALARS, lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(STRINGS, inner, max_size=4)), max_leaves=12)
# Bodies shaped like the real ones, mostly valid, with fuzzed parts, so
# the fuzz reaches the database and not only the schema checks.
NAME = st.one_of(st.from_regex(r"[a-z][a-z0-9_-]{0,10}", fullmatch=True),
                 NASTY)
GROUP = st.builds(
    lambda amount, accel, extra: {"resources:FPGA": amount, **accel,
                                  **extra},
    st.one_of(st.just("1"), STRINGS, SCALARS),
    st.dictionaries(st.builds("accel:{}".format, STRINGS), STRINGS,
                    max_size=2),
    st.dictionaries(STRINGS, st.one_of(STRINGS, JSON), max_size=1))
PROFILE = st.lists(st.fixed_dictionaries(
    {"name": NAME, "groups": st.lists(GROUP, min_size=1, max_size=2)},
    optional={"description": st.one_of(STRINGS, JSON),
              "uuid": st.one_of(STRINGS, st.uuids().map(str))}),
    min_size=1, max_size=2)
PROFILE_FIELDS = ["name", "description", "accel key", "accel value",
                  "amount", "trait key", "uuid"]


def _profile_with(field, value, suffix):
    """A valid profile but for one fuzzed field."""
    group = {"resources:FPGA": "1", "accel:function_id": "f"}
    profile = {"name": f"dp-{suffix}", "description": "d",
               "groups": [group]}
    if field in ("name", "description", "uuid"):
        profile[field] = value
    elif field == "accel key":
        group[f"accel:{value}"] = "v"
    elif field == "accel value":
        group["accel:function_id"] = value
    elif field == "amount":
        group["resources:FPGA"] = value
    else:
        group[f"trait:{value}"] = "required"
    return [profile]


PROFILE = st.one_of(
    st.builds(_profile_with, st.sampled_from(PROFILE_FIELDS),
              st.one_of(NASTY, STRINGS, SCALARS, JSON),
              st.uuids().map(lambda u: u.hex[:8])),
    PROFILE)
ARQ_CREATE = st.one_of(JSON, st.fixed_dictionaries(
    {"device_profile_name": st.one_of(STRINGS, JSON)}))
PATCH = st.dictionaries(STRINGS, st.lists(st.fixed_dictionaries(
    {"op": STRINGS, "path": STRINGS}, optional={"value": JSON}),
    max_size=3), max_size=3)
ATTRIBUTE_FIELDS = ["deployable_id", "key", "value"]


def _attribute_with(field, value, suffix):
    attribute = {"deployable_id": 1, "key": f"k-{suffix}", "value": "v"}
    attribute[field] = value
    return attribute


ATTRIBUTE = st.one_of(st.builds(
    _attribute_with, st.sampled_from(ATTRIBUTE_FIELDS),
    st.one_of(NASTY, STRINGS, SCALARS, JSON),
    st.uuids().map(lambda u: u.hex[:8])), st.fixed_dictionaries(
    {"deployable_id": st.one_of(st.integers(1, 3), STRINGS, JSON),
     "key": st.one_of(NAME, STRINGS), "value": st.one_of(NAME, STRINGS,
                                                         JSON)}))
QUERY = st.dictionaries(st.sampled_from(
    ["name", "limit", "marker", "instance", "bind_state", "arqs", "value",
     "deployable_id", "key", "type", "vendor", "hostname", "rp_uuid",
     "bogus"]), STRINGS, max_size=3)
VERSION = st.one_of(st.none(), STRINGS, st.sampled_from(
    ["accelerator 2.0", "accelerator 2.3", "accelerator latest"]))
CALLER = st.sampled_from([
    headers(), headers(project="p2"), headers(service=True),
    headers(roles="reader"), ADMIN, {}])


@pytest.fixture
def api(cyborg_on_each_db):
    """cyborg_lite on each database (tests.fixtures.cyborg)."""
    return cyborg_on_each_db


def _wire(text):
    """What a hostile client can put on the wire for ``text``: its UTF-8
    bytes, lone surrogates included, percent-encoded."""
    return parse.quote(text.encode("utf-8", "surrogatepass"), safe="")


def _send(api, method, path, caller, version, query=None, body=None):
    hdrs = dict(caller)
    if version is not None:
        # HTTP cannot carry CR/LF in a header; anything else goes.
        hdrs["OpenStack-API-Version"] = version.encode(
            "utf-8", "surrogatepass").decode("latin-1").replace(
            "\r", " ").replace("\n", " ")
    raw = None
    if body is not None:
        raw = json.dumps(body)
    query_string = "&".join(f"{_wire(k)}={_wire(v)}"
                            for k, v in (query or {}).items()) or None
    response = getattr(api.client, method)(
        path, headers=hdrs, query_string=query_string, data=raw,
        content_type="application/json")
    assert response.status_code < 500, (
        method, path, query, body, response.get_data(as_text=True))
    return response


def _readable(api):
    for path in ("/v2/device_profiles", "/v2/accelerator_requests",
                 "/v2/attributes", "/v2/deployables", "/v2/devices"):
        response = api.client.get(path, headers=ADMIN)
        assert response.status_code == 200, (path, response.get_data())
        response.get_json()


def test_creating_profiles(api):
    @FUZZ
    @given(body=st.one_of(PROFILE, JSON), caller=CALLER, version=VERSION)
    def run(body, caller, version):
        _send(api, "post", "/v2/device_profiles", caller, version,
              body=body)
    run()
    _readable(api)


def test_accelerator_requests(api):
    name = api.create_profile([{"resources:FPGA": "1"}])["name"]

    @FUZZ
    @given(create=ARQ_CREATE, patch=PATCH, query=QUERY, caller=CALLER,
           version=VERSION)
    def run(create, patch, query, caller, version):
        _send(api, "post", "/v2/accelerator_requests", caller, version,
              body=create)
        _send(api, "post", "/v2/accelerator_requests", caller, version,
              body={"device_profile_name": name})
        _send(api, "patch", "/v2/accelerator_requests", caller, version,
              body=patch)
        _send(api, "get", "/v2/accelerator_requests", caller, version,
              query=query)
        _send(api, "delete", "/v2/accelerator_requests", caller, version,
              query=query)
    run()
    _readable(api)


def test_attributes_devices_deployables(api):
    @FUZZ
    @given(body=st.one_of(ATTRIBUTE, JSON), query=QUERY, ident=STRINGS,
           caller=CALLER, version=VERSION)
    def run(body, query, ident, caller, version):
        _send(api, "post", "/v2/attributes", caller, version, body=body)
        for path in ("/v2/attributes", "/v2/devices", "/v2/deployables",
                     "/v2/device_profiles"):
            _send(api, "get", path, caller, version, query=query)
        safe = ident.encode("utf-8", "surrogatepass").hex()[:64] or "x"
        for path in (f"/v2/attributes/{safe}", f"/v2/devices/{safe}",
                     f"/v2/deployables/{safe}",
                     f"/v2/device_profiles/{safe}",
                     f"/v2/accelerator_requests/{safe}"):
            _send(api, "get", path, caller, version)
    run()
    _readable(api)


def test_not_yours_is_missing(api):
    name = api.create_profile([{"resources:FPGA": "1"}])["name"]
    theirs = api.create_arqs(name, caller=headers(project="p2",
                                                  service=True))[0]["uuid"]

    @FUZZ
    @given(method=st.sampled_from(["get", "delete", "patch"]),
           shape=st.sampled_from(["/v2/accelerator_requests/{}",
                                  "/v2/accelerator_requests?arqs={}",
                                  "/v2/accelerator_requests?marker={}"]),
           caller=st.sampled_from([headers(), headers(service=True),
                                   headers(roles="reader")]))
    def run(method, shape, caller):
        answers = []
        for ident in (theirs, str(uuid.uuid4())):
            body = ({ident: [{"op": "remove", "path": "/hostname"}]}
                    if method == "patch" else None)
            response = _send(api, method, shape.format(ident), caller, None,
                             body=body)
            text = response.get_data(as_text=True).replace(ident, "X")
            answers.append((response.status_code, text))
        assert answers[0] == answers[1]
    run()
    assert api.client.get(f"/v2/accelerator_requests/{theirs}",
                          headers=headers(project="p2")).status_code == 200
