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


"""Deployable attributes over HTTP: /v2/attributes."""

import json
import os
import subprocess
import sys
import uuid

import openstack
import pytest

from tests.fixtures.cyborg import ADMIN
from tests.fixtures.cyborg import FPGA_REGION0_RP
from tests.fixtures.cyborg import FPGA_REGION1_RP
from tests.fixtures.cyborg import headers
from tests.fixtures.cyborg import MEMBER

ATTRS = "/v2/attributes"
MANAGER = headers(roles="manager")


def _deployable(cyborg, rp_uuid):
    body = cyborg.client.get(f"/v2/deployables?rp_uuid={rp_uuid}",
                             headers=ADMIN).get_json()
    return body["deployables"][0]


def _error(response):
    return json.loads(response.get_json()["error_message"])["faultstring"]


def test_create_show_list_and_delete_an_attribute(cyborg):
    region0 = _deployable(cyborg, FPGA_REGION0_RP)
    response = cyborg.client.post(ATTRS, headers=ADMIN, json={
        "deployable_id": region0["uuid"], "key": "owner", "value": "team-a"})
    assert response.status_code == 201
    created = response.get_json()
    assert set(created) == {"uuid", "deployable_id", "key", "value",
                            "created_at", "updated_at", "links"}
    # the integer id real Cyborg shows, the one rendered on the deployable
    assert isinstance(created["deployable_id"], int)
    assert created["links"] == [{
        "href": f"http://localhost/v2/attributes/{created['uuid']}",
        "rel": "self"}]
    shown = cyborg.client.get(f"{ATTRS}/{created['uuid']}", headers=MANAGER)
    assert shown.status_code == 200 and shown.get_json() == created
    # the deployable lists it too
    deployable = cyborg.client.get(f"/v2/deployables/{region0['uuid']}",
                                   headers=ADMIN).get_json()
    assert {"owner": "team-a"} in json.loads(deployable["attributes_list"])
    listed = cyborg.client.get(
        f"{ATTRS}?deployable_id={created['deployable_id']}",
        headers=ADMIN).get_json()["attributes"]
    assert sorted((a["key"], a["value"]) for a in listed) == [
        ("owner", "team-a"), ("rc", "FPGA")]

    response = cyborg.client.delete(f"{ATTRS}/{created['uuid']}",
                                    headers=ADMIN)
    assert response.status_code == 204 and response.get_data() == b""
    assert cyborg.client.get(f"{ATTRS}/{created['uuid']}",
                             headers=ADMIN).status_code == 404
    again = cyborg.client.delete(f"{ATTRS}/{created['uuid']}", headers=ADMIN)
    assert again.status_code == 404
    assert created["uuid"] in _error(again)


def test_deployable_may_be_named_by_integer_id(cyborg):
    region1 = _deployable(cyborg, FPGA_REGION1_RP)
    rc = cyborg.client.get(
        f"{ATTRS}?deployable_id={region1['uuid']}&key=rc",
        headers=ADMIN).get_json()["attributes"]
    assert [a["value"] for a in rc] == ["FPGA"]
    response = cyborg.client.post(ATTRS, headers=ADMIN, json={
        "deployable_id": rc[0]["deployable_id"], "key": "zone",
        "value": "z1"})
    assert response.status_code == 201
    assert response.get_json()["deployable_id"] == rc[0]["deployable_id"]


def test_filters_by_deployable_and_key(cyborg):
    region0 = _deployable(cyborg, FPGA_REGION0_RP)
    region1 = _deployable(cyborg, FPGA_REGION1_RP)
    for region, value in ((region0, "a"), (region1, "b")):
        assert cyborg.client.post(ATTRS, headers=ADMIN, json={
            "deployable_id": region["uuid"], "key": "tier",
            "value": value}).status_code == 201
    tiers = cyborg.client.get(f"{ATTRS}?key=tier", headers=ADMIN
                              ).get_json()["attributes"]
    assert sorted(a["value"] for a in tiers) == ["a", "b"]
    only = cyborg.client.get(
        f"{ATTRS}?key=tier&deployable_id={region1['uuid']}",
        headers=ADMIN).get_json()["attributes"]
    assert [a["value"] for a in only] == ["b"]
    # 3 deployables with an "rc" each, 2 "tier": paged two at a time
    first = cyborg.client.get(f"{ATTRS}?limit=2", headers=ADMIN
                              ).get_json()["attributes"]
    rest = cyborg.client.get(
        f"{ATTRS}?limit=10&marker={first[-1]['uuid']}",
        headers=ADMIN).get_json()["attributes"]
    assert len(first) == 2 and len(rest) == 3
    unknown = cyborg.client.get(f"{ATTRS}?deployable_id={uuid.uuid4()}",
                                headers=ADMIN)
    assert unknown.status_code == 200
    assert unknown.get_json() == {"attributes": []}


@pytest.mark.parametrize("body, complaint", [
    ({"key": "k", "value": "v"}, "'deployable_id' is a required property"),
    ({"deployable_id": "DEP", "value": "v"}, "'key' is a required property"),
    ({"deployable_id": "DEP", "key": "k", "value": 1}, "body.value"),
    ({"deployable_id": "DEP", "key": "", "value": "v"}, "body.key"),
    ({"deployable_id": "DEP", "key": "k", "value": "v", "extra": 1},
     "'extra' was unexpected"),
    ({"deployable_id": "no-such", "key": "k", "value": "v"},
     "deployable_id 'no-such' names no deployable"),
    ({"deployable_id": 987654, "key": "k", "value": "v"},
     "deployable_id 987654 names no deployable"),
    ([{"deployable_id": "DEP", "key": "k", "value": "v"}], "body: "),
])
def test_bad_bodies_get_400_naming_the_field(cyborg, body, complaint):
    region0 = _deployable(cyborg, FPGA_REGION0_RP)
    text = json.dumps(body).replace('"DEP"', json.dumps(region0["uuid"]))
    response = cyborg.client.post(ATTRS, headers=ADMIN, data=text,
                                  content_type="application/json")
    assert response.status_code == 400
    assert complaint in _error(response)


def test_duplicate_key_on_a_deployable_is_409(cyborg):
    region0 = _deployable(cyborg, FPGA_REGION0_RP)
    response = cyborg.client.post(ATTRS, headers=ADMIN, json={
        "deployable_id": region0["uuid"], "key": "rc", "value": "GPU"})
    assert response.status_code == 409
    assert "already has an attribute 'rc'" in _error(response)


def test_bad_query_and_unknown_uuid(cyborg):
    response = cyborg.client.get(f"{ATTRS}?deployable_id=x%20y",
                                 headers=ADMIN)
    assert response.status_code == 400
    assert "deployable_id" in _error(response)
    assert cyborg.client.get(f"{ATTRS}?colour=red", headers=ADMIN
                             ).status_code == 400
    assert cyborg.client.get(f"{ATTRS}/not-a-uuid", headers=ADMIN
                             ).status_code == 404
    put = cyborg.client.put(ATTRS, headers=ADMIN)
    assert put.status_code == 405
    assert {"GET", "POST"} <= set(put.headers["Allow"].split(", "))


def test_policy_managers_read_admins_write(cyborg):
    region0 = _deployable(cyborg, FPGA_REGION0_RP)
    body = {"deployable_id": region0["uuid"], "key": "k", "value": "v"}
    assert cyborg.client.get(ATTRS, headers=MEMBER).status_code == 403
    assert cyborg.client.get(ATTRS, headers=MANAGER).status_code == 200
    assert cyborg.client.post(ATTRS, headers=MANAGER,
                              json=body).status_code == 403
    created = cyborg.client.post(ATTRS, headers=ADMIN, json=body).get_json()
    assert cyborg.client.get(f"{ATTRS}/{created['uuid']}",
                             headers=MEMBER).status_code == 403
    assert cyborg.client.delete(f"{ATTRS}/{created['uuid']}",
                                headers=MANAGER).status_code == 403
    assert cyborg.client.delete(f"{ATTRS}/{created['uuid']}",
                                headers=ADMIN).status_code == 204


def test_openstacksdk_attribute_calls(cyborg_server):
    """The SDK wraps the POST body in ``attribute`` and reads replies flat."""
    region0 = _deployable(cyborg_server, FPGA_REGION0_RP)
    conn = openstack.connect(auth_type="none",
                             auth={"endpoint": cyborg_server.url},
                             load_yaml_config=False, load_envvars=False)
    acc = conn.accelerator
    created = acc.create_attribute(deployable_id=region0["uuid"],
                                   key="sdk", value="yes")
    assert (created.key, created.value) == ("sdk", "yes")
    assert isinstance(created.deployable_id, int)
    fetched = acc.get_attribute(created.id)
    assert (fetched.key, fetched.value) == ("sdk", "yes")
    assert ("sdk", "yes") in [(a.key, a.value) for a in acc.attributes()]
    acc.delete_attribute(created.id, ignore_missing=False)
    assert "sdk" not in [a.key for a in acc.attributes()]
    conn.close()


def test_openstack_cli_device_attribute_create_and_show(cyborg_server):
    region0 = _deployable(cyborg_server, FPGA_REGION0_RP)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    command = [os.path.join(os.path.dirname(sys.executable), "openstack"),
               "--os-auth-type", "none", "--os-endpoint",
               cyborg_server.url + "/accelerator", "accelerator", "device",
               "attribute"]

    def run(*args):
        result = subprocess.run([*command, *args, "-f", "json"], env=env,
                                capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    created = run("create", region0["uuid"], "cli", "on")
    assert (created["key"], created["value"]) == ("cli", "on")
    assert run("show", created["uuid"])["deployable_id"] == \
        created["deployable_id"]


def test_inventory_reimport_keeps_attributes_an_admin_created(cyborg):
    from cyborg_lite.inventory import apply as inventory_apply
    from tests.fixtures.cyborg import load_example_inventory

    region0 = _deployable(cyborg, FPGA_REGION0_RP)
    created = cyborg.client.post(ATTRS, headers=ADMIN, json={
        "deployable_id": region0["uuid"], "key": "owner",
        "value": "team-a"}).get_json()

    inventory_apply.apply_document(cyborg.db, load_example_inventory())

    listed = cyborg.client.get(
        f"{ATTRS}?deployable_id={created['deployable_id']}",
        headers=ADMIN).get_json()["attributes"]
    assert sorted((a["key"], a["value"]) for a in listed) == [
        ("owner", "team-a"), ("rc", "FPGA")]
