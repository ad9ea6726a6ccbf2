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


"""Version documents, microversion headers, the error envelope, routing."""

import json

import pytest

from tests.fixtures.cyborg import MEMBER


def test_root_document_links_where_it_was_served(cyborg):
    for prefix in ("", "/accelerator"):
        body = cyborg.client.get(prefix + "/").get_json()
        assert body["name"] == "OpenStack Cyborg API"
        version = body["default_version"]
        assert version == body["versions"][0]
        assert version["id"] == "v2"
        assert (version["min_version"], version["max_version"]) == (
            "2.0", "2.4")
        href = version["links"][0]["href"]
        assert href == f"http://localhost{prefix}/v2"
        # the link resolves to the v2 document
        assert cyborg.client.get(href).get_json()["id"] == "v2.0"


def test_v2_document_is_bare_with_version_headers(cyborg):
    response = cyborg.client.get("/accelerator/v2/")
    body = response.get_json()
    assert body["id"] == "v2.0" and body["status"] == "CURRENT"
    assert body["links"][0]["href"] == "http://localhost/accelerator/v2/"
    assert response.headers["OpenStack-API-Minimum-Version"] == "2.0"
    assert response.headers["OpenStack-API-Maximum-Version"] == "2.4"
    assert response.headers["OpenStack-API-Version"] == "accelerator 2.0"
    assert "OpenStack-API-Version" in response.headers["Vary"]
    root = cyborg.client.get("/")
    assert "OpenStack-API-Version" not in root.headers


@pytest.mark.parametrize("header, expected", [
    ("accelerator 2.2", "accelerator 2.2"),
    ("2.1", "accelerator 2.1"),
    ("accelerator latest", "accelerator 2.4"),
    ("Accelerator LATEST", "accelerator 2.4"),
    ("latest", "accelerator 2.4"),
    ("compute 2.80, accelerator 2.3", "accelerator 2.3"),
    ("accelerator 02.1", "accelerator 2.1"),
])
def test_accepted_microversions(cyborg, header, expected):
    response = cyborg.client.get("/v2/device_profiles", headers={
        **MEMBER, "OpenStack-API-Version": header})
    assert response.status_code == 200
    assert response.headers["OpenStack-API-Version"] == expected


RANGE = "The supported version range is: [2.0, 2.4]."


# The descriptions real Cyborg 17 answers with (recorded against it with
# Accept: application/json, as openstacksdk sends).
@pytest.mark.parametrize("header, description", [
    ("accelerator 2.9", "Version 2.9 was requested but the minor version "
                        "is not supported by this service. " + RANGE),
    ("2.5", "Version 2.5 was requested but the minor version is not "
            "supported by this service. " + RANGE),
    ("accelerator 3.0", "Mutually exclusive versions requested. Version 3.0 "
                        "requested but not supported by this service. "
                        + RANGE),
    ("accelerator 1.9", "Mutually exclusive versions requested. Version 1.9 "
                        "requested but not supported by this service. "
                        + RANGE),
    ("accelerator two", "Invalid value for OpenStack-API-Version header"),
    ("accelerator 2.x", "Invalid value for OpenStack-API-Version header"),
    ("accelerator 2", "Invalid value for OpenStack-API-Version header"),
    ("compute 2.80", "Invalid value for OpenStack-API-Version header"),
    ("a b c", "Invalid value for OpenStack-API-Version header"),
])
def test_unsupported_microversions_get_406_in_cyborgs_shape(cyborg, header,
                                                            description):
    for path in ("/v2/device_profiles", "/v2"):
        response = cyborg.client.get(path, headers={
            **MEMBER, "OpenStack-API-Version": header})
        assert response.status_code == 406
        fault = json.loads(response.get_json()["error_message"])
        assert fault == {"code": 406, "title": "Not Acceptable",
                         "description": description}


def test_version_errors_leave_the_root_document_alone(cyborg):
    response = cyborg.client.get("/", headers={
        "OpenStack-API-Version": "accelerator 2.9"})
    assert response.status_code == 200


def test_errors_use_cyborg_envelope(cyborg):
    response = cyborg.client.get("/v2/nothing-here")
    assert response.status_code == 404
    fault = json.loads(response.get_json()["error_message"])
    assert set(fault) == {"faultcode", "faultstring", "debuginfo"}


def test_unknown_method_is_405_with_allow(cyborg):
    response = cyborg.client.put("/v2/accelerator_requests", headers=MEMBER)
    assert response.status_code == 405
    assert set(response.headers["Allow"].split(", ")) >= {
        "GET", "POST", "PATCH", "DELETE"}
    assert "error_message" in response.get_json()


def test_unknown_query_parameter_is_400(cyborg):
    for path in ("/v2/device_profiles", "/v2/deployables", "/v2/devices"):
        response = cyborg.client.get(f"{path}?colour=red", headers={
            "X-Roles": "admin", "X-Project-Id": "a"})
        assert response.status_code == 400
        assert "colour" in response.get_json()["error_message"]


def test_noauth_without_headers_acts_as_default_project(cyborg):
    profile = cyborg.create_profile([{"resources:FPGA": "1"}])
    response = cyborg.client.post("/v2/accelerator_requests",
                                  json={"device_profile_name":
                                        profile["name"]})
    assert response.status_code == 201
    assert response.get_json()["arqs"][0]["project_id"] == "standalone"
