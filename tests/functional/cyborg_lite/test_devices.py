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


"""Devices and deployables over HTTP."""

import json
import uuid

from tests.fixtures.cyborg import ADMIN
from tests.fixtures.cyborg import FPGA_REGION0_RP
from tests.fixtures.cyborg import headers
from tests.fixtures.cyborg import MEMBER

MANAGER = headers(roles="manager")


def test_deployables_carry_rp_uuid_and_json_string_attributes(cyborg):
    body = cyborg.client.get("/v2/deployables", headers=ADMIN).get_json()
    deployables = body["deployables"]
    assert len(deployables) == 3
    region0 = next(d for d in deployables if d["rp_uuid"] == FPGA_REGION0_RP)
    assert region0["name"] == "compute-1.example.org_0000:5e:00.0_0"
    assert region0["num_accelerators"] == 4
    assert json.loads(region0["attributes_list"]) == [{"rc": "FPGA"}]
    assert [link["rel"] for link in region0["links"]] == ["self",
                                                          "bookmark"]
    shown = cyborg.client.get(f"/v2/deployables/{region0['uuid']}",
                              headers=MANAGER)
    assert shown.get_json() == region0
    filtered = cyborg.client.get(
        f"/v2/deployables?rp_uuid={FPGA_REGION0_RP}", headers=ADMIN)
    assert [d["uuid"] for d in filtered.get_json()["deployables"]] == [
        region0["uuid"]]
    assert cyborg.client.get(f"/v2/deployables/{uuid.uuid4()}",
                             headers=ADMIN).status_code == 404


def test_devices_list_filter_and_status_from_2_3(cyborg):
    devices = cyborg.client.get("/v2/devices", headers=ADMIN).get_json()[
        "devices"]
    assert sorted(d["type"] for d in devices) == ["FPGA", "GPU"]
    assert all("status" not in d for d in devices)
    fpga = cyborg.client.get("/v2/devices?type=FPGA&hostname="
                             "compute-1.example.org",
                             headers=ADMIN).get_json()["devices"]
    assert len(fpga) == 1 and fpga[0]["vendor"] == "0x8086"
    assert json.loads(fpga[0]["std_board_info"])["product_id"] == "0x0b30"
    new = headers(project="a", roles="admin", version="2.3")
    shown = cyborg.client.get(f"/v2/devices/{fpga[0]['uuid']}",
                              headers=new).get_json()
    assert shown["status"] == "enabled"


def test_region_state_and_device_health_from_2_4(cyborg):
    new = headers(project="a", roles="admin", version="2.4")
    old = cyborg.client.get("/v2/deployables", headers=headers(
        project="a", roles="admin", version="2.3")).get_json()
    assert all("state" not in d for d in old["deployables"])
    deployables = cyborg.client.get("/v2/deployables", headers=new
                                    ).get_json()["deployables"]
    assert {d["state"] for d in deployables} == {"ready"}
    devices = cyborg.client.get("/v2/devices", headers=new).get_json()[
        "devices"]
    assert [d["health"] for d in devices] == [None, None]
    old = cyborg.client.get("/v2/devices", headers=headers(
        project="a", roles="admin", version="2.3")).get_json()["devices"]
    assert all("health" not in d for d in old)


def test_members_cannot_read_devices(cyborg):
    assert cyborg.client.get("/v2/devices", headers=MEMBER
                             ).status_code == 403
    assert cyborg.client.get("/v2/deployables", headers=MEMBER
                             ).status_code == 403


def test_disabled_device_takes_no_binds_until_enabled(cyborg):
    fpga = cyborg.client.get("/v2/devices?type=FPGA", headers=ADMIN
                             ).get_json()["devices"][0]
    url = f"/v2/devices/{fpga['uuid']}"
    assert cyborg.client.post(url + "/disable", headers=MEMBER
                              ).status_code == 403
    response = cyborg.client.post(url + "/disable", headers=ADMIN)
    assert response.status_code == 200 and response.get_data() == b""
    status = cyborg.client.get(url, headers=headers(
        project="a", roles="admin", version="2.3")).get_json()["status"]
    assert status == "maintaining"
    profile = cyborg.create_profile([{"resources:FPGA": "1"}])
    arq = cyborg.create_arqs(profile["name"])[0]["uuid"]
    assert cyborg.bind([arq], FPGA_REGION0_RP, str(uuid.uuid4())
                       ).status_code == 409
    assert cyborg.client.post(url + "/enable", headers=ADMIN
                              ).status_code == 200
    arq = cyborg.create_arqs(profile["name"])[0]["uuid"]
    assert cyborg.bind([arq], FPGA_REGION0_RP, str(uuid.uuid4())
                       ).status_code == 202
