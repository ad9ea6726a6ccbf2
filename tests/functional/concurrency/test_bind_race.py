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

"""50 instances race for the 4 attach handles of one region.

Four gunicorn workers share one database (MariaDB, and PostgreSQL); the
database row is the only lock. 50 Nova-form binds of 50 different instances'
ARQs arrive at once, all for the same region: exactly 4 may win, the other
46 must be answered 409 with their ARQs left ``BindFailed`` (never stuck in
``BindStarted``), no attach handle may be handed out twice, and Nova hears
exactly one ``completed`` event per winner and nothing about the losers.
"""

import collections
import concurrent.futures
import threading
import uuid

import pytest
import requests

from tests.fixtures.cyborg_server import make_inventory
from tests.fixtures.cyborg_server import mariadb_database
from tests.fixtures.cyborg_server import postgresql_database

BINDS = 50
HANDLES = 4


@pytest.fixture(params=[
    pytest.param("mariadb", marks=pytest.mark.mariadb),
    pytest.param("postgresql", marks=pytest.mark.postgresql),
])
def database_url(request):
    """A fresh, uniquely named database on a real server."""
    helper = {"mariadb": mariadb_database,
              "postgresql": postgresql_database}[request.param]
    with helper() as url:
        yield url


def _nova_headers(project_id):
    # NOTE(interop): what Nova sends behind noauth: the user's project and
    # roles, plus the service token's roles (send_service_user_token).
    return {"X-Project-Id": project_id, "X-User-Id": uuid.uuid4().hex,
            "X-Roles": "member,reader", "X-Service-Roles": "service"}


def _bdf(info):
    """``0000:5e:00.1`` from Nova's attach_handle_info (hex strings)."""
    return "{:04x}:{:02x}:{:02x}.{:x}".format(
        *(int(str(info[key]), 16)
          for key in ("domain", "bus", "device", "function")))


def test_concurrent_binds_take_each_handle_once(
        database_url, cyborg_server_factory, nova_standin):
    document = make_inventory(handles_per_region=(HANDLES,))
    region = document["devices"][0]["regions"][0]
    server = cyborg_server_factory(
        db_url=database_url, inventories=[document], workers=4,
        nova_url=nova_standin.endpoint,
        options={"nova": {"notify_instant_binds": "true"}})
    api = server.url + "/v2"
    headers = _nova_headers(uuid.uuid4().hex)

    dp_name = f"race-{uuid.uuid4().hex[:8]}"
    resp = requests.post(f"{api}/device_profiles", timeout=30, json=[
        {"name": dp_name, "groups": [{"resources:FPGA": "1"}]}])
    assert resp.status_code == 201, resp.text

    def create(_):
        resp = requests.post(f"{api}/accelerator_requests", timeout=60,
                             headers=headers,
                             json={"device_profile_name": dp_name})
        assert resp.status_code == 201, resp.text
        (arq,) = resp.json()["arqs"]
        return arq["uuid"]

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        # instance uuid -> ARQ uuid
        arqs = {str(uuid.uuid4()): arq for arq in pool.map(create,
                                                            range(BINDS))}

    barrier = threading.Barrier(BINDS)

    def bind(instance_uuid, arq_uuid):
        body = {arq_uuid: [
            {"path": "/hostname", "op": "add", "value": document["host"]},
            {"path": "/device_rp_uuid", "op": "add",
             "value": region["rp_uuid"]},
            {"path": "/instance_uuid", "op": "add", "value": instance_uuid},
        ]}
        with requests.Session() as session:
            barrier.wait(30)
            resp = session.patch(f"{api}/accelerator_requests", json=body,
                                 headers=headers, timeout=60)
        return arq_uuid, resp

    with concurrent.futures.ThreadPoolExecutor(BINDS) as pool:
        results = list(pool.map(lambda item: bind(*item), arqs.items()))

    codes = collections.Counter(resp.status_code for _, resp in results)
    odd = [(resp.status_code, resp.text) for _, resp in results
           if resp.status_code not in (202, 409)]
    assert codes == {202: HANDLES, 409: BINDS - HANDLES}, (codes, odd[:3])
    for _, resp in results:
        if resp.status_code == 409:
            assert "error_message" in resp.json(), resp.text

    winners = {arq for arq, resp in results if resp.status_code == 202}
    resp = requests.get(f"{api}/accelerator_requests", headers=headers,
                        timeout=60)
    assert resp.status_code == 200, resp.text
    listed = {arq["uuid"]: arq for arq in resp.json()["arqs"]}
    assert set(listed) == set(arqs.values())
    states = {arq_uuid: arq["state"] for arq_uuid, arq in listed.items()}
    bound = [arq for arq in listed.values() if arq["state"] == "Bound"]
    assert collections.Counter(states.values()) == {
        "Bound": HANDLES, "BindFailed": BINDS - HANDLES}, states
    assert {arq["uuid"] for arq in bound} == winners

    bdfs = [_bdf(arq["attach_handle_info"]) for arq in bound]
    assert sorted(bdfs) == sorted(
        h["pci_address"] for h in region["attach_handles"]), bdfs
    assert len({arq["attach_handle_uuid"] for arq in bound}) == HANDLES
    assert all(arq["attach_handle_type"] == "PCI" for arq in bound)

    nova_standin.wait_for_events(HANDLES)
    events = nova_standin.settle()
    assert sorted(e["tag"] for e in events) == sorted(winners), events
    assert {e["status"] for e in events} == {"completed"}
    assert {e.microversion for e in events} == {"2.82"}
