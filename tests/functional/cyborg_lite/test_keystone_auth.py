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


"""auth_strategy = keystone: keystonemiddleware in front of the app, with
its own AuthTokenFixture standing in for Keystone's token validation."""

import uuid

from keystonemiddleware import fixture as ks_fixture
import pytest

from tests.fixtures.cyborg import FPGA_REGION0_RP
from tests.fixtures.cyborg import make_cyborg


@pytest.fixture
def keystone(tmp_path):
    auth = ks_fixture.AuthTokenFixture()
    auth.setUp()
    cyborg = make_cyborg(
        tmp_path, auth_strategy="keystone",
        **{"keystone_authtoken.www_authenticate_uri":
           "http://keystone.example.org/identity"})
    tokens = {}
    for name, project, roles in (("member", "p1", ["member", "reader"]),
                                 ("admin", "adm", ["admin", "member",
                                                   "reader"]),
                                 ("service", "svc", ["service"])):
        tokens[name] = uuid.uuid4().hex
        auth.add_token_data(token_id=tokens[name], project_id=project,
                            user_id=f"u-{name}", role_list=roles)
    yield cyborg, tokens
    auth.cleanUp()
    cyborg.db.dispose()


def test_version_documents_need_no_token(keystone):
    cyborg, _ = keystone
    assert cyborg.client.get("/").status_code == 200
    assert cyborg.client.get("/accelerator/v2").status_code == 200
    assert cyborg.client.get("/v2/device_profiles").status_code == 401


def test_nova_flow_with_user_and_service_tokens(keystone):
    cyborg, tokens = keystone
    admin = {"X-Auth-Token": tokens["admin"]}
    nova = {"X-Auth-Token": tokens["member"],
            "X-Service-Token": tokens["service"]}
    response = cyborg.client.post(
        "/v2/device_profiles", headers=admin,
        json=[{"name": "dp", "groups": [{"resources:FPGA": "1"}]}])
    assert response.status_code == 201
    response = cyborg.client.post("/v2/accelerator_requests", headers=nova,
                                  json={"device_profile_name": "dp"})
    assert response.status_code == 201
    arq = response.get_json()["arqs"][0]
    assert arq["project_id"] == "p1"
    body = {arq["uuid"]: [
        {"op": "add", "path": "/hostname", "value": "h"},
        {"op": "add", "path": "/device_rp_uuid", "value": FPGA_REGION0_RP},
        {"op": "add", "path": "/instance_uuid", "value": str(uuid.uuid4())}]}
    # forged identity headers are replaced by the middleware
    forged = {"X-Auth-Token": tokens["member"], "X-Service-Roles": "service",
              "X-Roles": "admin"}
    assert cyborg.client.patch("/v2/accelerator_requests", headers=forged,
                               json=body).status_code == 403
    assert cyborg.client.patch("/v2/accelerator_requests", headers=nova,
                               json=body).status_code == 202
