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


"""Cyborg's routing: a path whose first segment is not ``v2`` is served
as ``/v2/...``, at the root and under ``/accelerator``; the version
documents stay where they are."""

import json
import uuid

import pytest
import requests

from tests.fixtures.cyborg import ADMIN
from tests.fixtures.cyborg import FPGA_REGION0_RP
from tests.fixtures.cyborg import NOVA


@pytest.mark.parametrize("prefix", ["", "/accelerator"])
def test_unversioned_paths_are_the_v2_api(cyborg, prefix):
    profile = cyborg.create_profile([{"resources:FPGA": "1"}])
    response = cyborg.client.post(
        f"{prefix}/accelerator_requests", headers=NOVA,
        json={"device_profile_name": profile["name"]})
    assert response.status_code == 201
    arq = response.get_json()["arqs"][0]
    # the v2 version headers, and links to the canonical /v2 location
    assert response.headers["OpenStack-API-Version"] == "accelerator 2.0"
    assert arq["links"][0]["href"] == (
        f"http://localhost{prefix}/v2/accelerator_requests/{arq['uuid']}")
    shown = cyborg.client.get(f"{prefix}/accelerator_requests/{arq['uuid']}",
                              headers=NOVA)
    assert shown.get_json() == cyborg.client.get(
        f"{prefix}/v2/accelerator_requests/{arq['uuid']}",
        headers=NOVA).get_json()
    listed = cyborg.client.get(f"{prefix}/devices?type=GPU", headers=ADMIN)
    assert [d["type"] for d in listed.get_json()["devices"]] == ["GPU"]


@pytest.mark.parametrize("prefix", ["", "/accelerator"])
def test_version_documents_stay_put(cyborg, prefix):
    root = cyborg.client.get(prefix or "/")
    assert root.get_json()["name"] == "OpenStack Cyborg API"
    assert "OpenStack-API-Version" not in root.headers
    assert cyborg.client.get(prefix + "/").get_json()["name"] == \
        "OpenStack Cyborg API"
    for path in ("/v2", "/v2/"):
        assert cyborg.client.get(prefix + path).get_json()["id"] == "v2.0"


def test_unversioned_errors_microversions_and_methods(cyborg):
    missing = cyborg.client.get("/no_such_collection", headers=ADMIN)
    assert missing.status_code == 404
    assert json.loads(missing.get_json()["error_message"])["faultcode"] == \
        "Client"
    too_new = cyborg.client.get("/devices", headers={
        **ADMIN, "OpenStack-API-Version": "accelerator 2.5"})
    assert too_new.status_code == 406
    new = cyborg.client.get("/devices", headers={
        **ADMIN, "OpenStack-API-Version": "accelerator 2.4"})
    assert all("status" in d and "health" in d
               for d in new.get_json()["devices"])
    put = cyborg.client.put("/device_profiles", headers=ADMIN)
    assert put.status_code == 405 and "POST" in put.headers["Allow"]


def test_nova_flow_over_http_without_v2(cyborg_server):
    """A client whose endpoint lacks /v2 (real Cyborg accepts it)."""
    cyborg = cyborg_server
    profile = cyborg.create_profile([{"resources:FPGA": "1"}])
    base = cyborg.url + "/accelerator"
    arq = requests.post(f"{base}/accelerator_requests", headers=NOVA,
                        json={"device_profile_name": profile["name"]},
                        timeout=10).json()["arqs"][0]
    instance = str(uuid.uuid4())
    body = {arq["uuid"]: [
        {"op": "add", "path": "/hostname", "value": "compute-1"},
        {"op": "add", "path": "/device_rp_uuid", "value": FPGA_REGION0_RP},
        {"op": "add", "path": "/instance_uuid", "value": instance}]}
    assert requests.patch(f"{base}/accelerator_requests", json=body,
                          headers=NOVA, timeout=10).status_code == 202
    bound = requests.get(f"{base}/accelerator_requests",
                         params={"instance": instance}, headers=NOVA,
                         timeout=10).json()["arqs"]
    assert [a["state"] for a in bound] == ["Bound"]
    assert requests.delete(f"{base}/accelerator_requests",
                           params={"instance": instance}, headers=NOVA,
                           timeout=10).status_code == 204
