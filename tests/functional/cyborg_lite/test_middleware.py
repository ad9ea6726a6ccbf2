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

"""oslo.middleware around the app (cyborg_lite.api.middleware): a request
id on every answer and in the log, proxy headers only when trusted, CORS,
the 413 in the API's format, and links that never follow a raw Host
header."""

import json
import re
import socket

import pytest

from tests.fixtures.cyborg import ADMIN
from tests.fixtures.cyborg import make_cyborg
from tests.fixtures.cyborg import MEMBER
from tests.fixtures.cyborg_server import CyborgServer

DPS = "/v2/device_profiles"
REQUEST_ID = re.compile(r"req-[0-9a-f-]{36}")


def _fault(response):
    return json.loads(response.get_json()["error_message"])["faultstring"]


@pytest.fixture
def make(tmp_path):
    made = []

    def factory(**overrides):
        instance = make_cyborg(tmp_path, **overrides)
        made.append(instance)
        return instance

    yield factory
    for instance in made:
        instance.app.extensions["cyborg_lite"].notifier.shutdown()
        instance.db.dispose()


@pytest.mark.parametrize("method, path, kwargs, status", [
    ("get", "/", {}, 200),
    ("get", DPS, {"headers": ADMIN}, 200),
    ("get", "/v2/no_such_thing", {"headers": ADMIN}, 404),
    ("get", "/healthcheck", {}, 200),
    ("post", DPS, {"headers": ADMIN, "data": b"x" * 200000,
                   "content_type": "application/json"}, 413),
])
def test_every_answer_carries_a_request_id(cyborg, method, path, kwargs,
                                           status):
    response = getattr(cyborg.client, method)(path, **kwargs)

    assert response.status_code == status
    assert REQUEST_ID.fullmatch(response.headers["x-openstack-request-id"])


def test_each_request_gets_its_own_id(cyborg):
    ids = {cyborg.client.get("/").headers["x-openstack-request-id"]
           for _ in range(3)}
    assert len(ids) == 3


def test_keystone_401_carries_a_request_id(make):
    api = make(**{"auth_strategy": "keystone",
                  "keystone_authtoken.www_authenticate_uri":
                      "http://127.0.0.1:5000/v3",
                  "keystone_authtoken.delay_auth_decision": False})
    response = api.client.get(DPS)

    assert response.status_code == 401
    assert REQUEST_ID.fullmatch(response.headers["x-openstack-request-id"])


def test_413_is_in_the_api_format_with_the_limit(cyborg):
    limit = cyborg.conf.oslo_middleware.max_request_body_size
    response = cyborg.client.post(DPS, headers=ADMIN,
                                  data=b"x" * (limit + 1),
                                  content_type="application/json")

    assert response.status_code == 413
    assert response.content_type == "application/json"
    assert _fault(response) == (f"Request is too large. Larger than "
                                f"max_request_body_size ({limit}).")


def _links(api, headers=None, **kwargs):
    profile = api.create_profile([{"resources:FPGA": "1"}])
    api.create_profile([{"resources:FPGA": "1"}])
    api.conf.set_override("max_limit", 1, group="api")
    listing = api.client.get(DPS, headers={**MEMBER, **(headers or {})},
                             **kwargs)
    one = api.client.get(f"{DPS}/{profile['uuid']}",
                         headers={**MEMBER, **(headers or {})}, **kwargs)
    return listing, one


def test_links_follow_the_public_endpoint_not_the_host(make):
    api = make(**{"api.public_endpoint": "https://cloud.example.org:6666"})
    listing, one = _links(api, headers={"Host": "evil.example"})

    assert listing.status_code == 200
    assert listing.get_json()["device_profiles_links"][0]["href"] \
        .startswith("https://cloud.example.org:6666/v2/device_profiles?")
    assert listing.headers["Link"].startswith(
        "<https://cloud.example.org:6666/v2/device_profiles?")
    assert one.get_json()["device_profile"]["links"][0]["href"].startswith(
        "https://cloud.example.org:6666/v2/device_profiles/")
    versions = api.client.get("/", headers={"Host": "evil.example"})
    assert "evil" not in versions.get_data(as_text=True)


@pytest.mark.parametrize("host", ["", "bad host", "a/b", "h:port",
                                  "x@evil.example", "[::1"])
def test_a_malformed_host_is_400(cyborg, host):
    response = cyborg.client.get(DPS, headers={**MEMBER, "Host": host})

    assert response.status_code == 400
    assert "is not a host name" in _fault(response)


@pytest.mark.parametrize("host", ["cyborg.example.org:6666",
                                  "cyborg.example.org.", "192.0.2.1",
                                  "[2001:db8::1]:6666", "localhost"])
def test_well_formed_hosts_are_served(cyborg, host):
    response = cyborg.client.get(DPS, headers={**MEMBER, "Host": host})

    assert response.status_code == 200


def test_proxy_headers_are_ignored_unless_trusted(make):
    forwarded = {"X-Forwarded-Proto": "https",
                 "X-Forwarded-Host": "api.example.org",
                 "X-Forwarded-Prefix": "/accel"}
    untrusted = make()
    trusted = make(**{"oslo_middleware.enable_proxy_headers_parsing": True})

    _, plain = _links(untrusted, headers=forwarded)
    _, proxied = _links(trusted, headers=forwarded)

    assert plain.get_json()["device_profile"]["links"][0]["href"] \
        .startswith("http://localhost/v2/")
    assert proxied.get_json()["device_profile"]["links"][0]["href"] \
        .startswith("https://api.example.org/accel/v2/")


def test_cors_preflight_from_an_allowed_origin(make):
    api = make(**{"cors.allowed_origin": ["https://dashboard.example.org"]})
    response = api.client.options(DPS, headers={
        "Origin": "https://dashboard.example.org",
        "Access-Control-Request-Method": "GET",
        "Access-Control-Request-Headers": "X-Auth-Token"})
    other = api.client.options(DPS, headers={
        "Origin": "https://evil.example",
        "Access-Control-Request-Method": "GET"})

    assert response.headers["Access-Control-Allow-Origin"] == \
        "https://dashboard.example.org"
    assert "Access-Control-Allow-Origin" not in other.headers


def _raw(url, request):
    host, port = url.split("//")[1].split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(request)
        data = b""
        while b"\r\n\r\n" not in data or not _complete(data):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return head.decode("latin-1"), body


def _complete(data):
    head, _, body = data.partition(b"\r\n\r\n")
    match = re.search(rb"(?i)content-length: *(\d+)", head)
    return match is not None and len(body) >= int(match.group(1))


@pytest.fixture(scope="module")
def gunicorn(tmp_path_factory):
    """cyborg_lite under gunicorn (the server that decodes chunks)."""
    server = CyborgServer(tmp_path_factory.mktemp("gunicorn"), workers=1,
                          options={"DEFAULT": {"debug": "True"}})
    with server:
        yield server


def test_malformed_chunked_body_is_400_logged_with_its_request_id(
        gunicorn):
    head, body = _raw(gunicorn.url, (
        b"POST /v2/device_profiles HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/json\r\nX-Roles: admin\r\n"
        b"X-Project-Id: p1\r\nTransfer-Encoding: chunked\r\n"
        b"Connection: close\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"))
    request_id = REQUEST_ID.search(head).group()

    assert head.startswith("HTTP/1.1 400"), head + body.decode()
    assert b"the request body could not be read" in body
    lines = [line for line in gunicorn.log().splitlines()
             if request_id in line]
    assert any("could not be read" in line for line in lines), \
        gunicorn.log()
