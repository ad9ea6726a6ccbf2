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


"""Device disable/enable against a real Placement: ``reserved`` follows the
device status, the scheduler's view with it, and a Placement failure leaves
the status unchanged."""

import json
import uuid

import pytest
import sqlalchemy as sa

from accel_common import inventory
from accel_common.placement import client as placement_client
from accel_tools.embedded.common import free_port
from accel_tools.embedded.placement import apply_client_conf
from accel_tools.embedded.placement import MICROVERSION
from cyborg_lite.db import devices as device_db
from cyborg_lite.db import models
from cyborg_lite.inventory import apply as inventory_apply
from ironic_accel.placement import reporter
from tests.fixtures.cyborg import ADMIN
from tests.fixtures.cyborg import headers
from tests.fixtures.cyborg import load_example_inventory
from tests.fixtures.cyborg import make_cyborg
from tests.fixtures.placement import create_compute_node

ADMIN_2_3 = headers(project="admin-project", roles="admin", version="2.3")


class Host:
    """A compute host reported to Placement and imported into cyborg."""

    def __init__(self, cyborg, conn, document):
        self.cyborg, self.conn, self.document = cyborg, conn, document
        self.fpga_rps = [r["rp_uuid"]
                         for r in document["devices"][0]["regions"]]
        self.gpu_rp = document["devices"][1]["regions"][0]["rp_uuid"]
        devices = cyborg.client.get("/v2/devices?type=FPGA",
                                    headers=ADMIN).get_json()["devices"]
        self.fpga_url = f"/v2/devices/{devices[0]['uuid']}"

    def reserved(self, rp_uuid):
        response = self.conn.placement.get(
            f"/resource_providers/{rp_uuid}/inventories",
            microversion=MICROVERSION)
        assert response.status_code == 200, response.text
        inventories = response.json()["inventories"]
        return {rc: (inv["reserved"], inv["total"])
                for rc, inv in inventories.items()}

    def fpga_candidates(self):
        """Providers the scheduler could put one FPGA on, on this host."""
        response = self.conn.placement.get(
            "/allocation_candidates",
            params={"resources": "FPGA:1",
                    "in_tree": self.document["compute_rp"]},
            microversion=MICROVERSION)
        assert response.status_code == 200, response.text
        return {rp for request in response.json()["allocation_requests"]
                for rp in request["allocations"]}

    def status(self):
        return self.cyborg.client.get(self.fpga_url, headers=ADMIN_2_3
                                      ).get_json()["status"]


def _document(conn):
    compute_rp, host = create_compute_node(conn)
    document = load_example_inventory(host)
    document["node_uuid"] = str(uuid.uuid4())
    for device in document["devices"]:
        for region in device["regions"]:
            region["rp_uuid"] = inventory.region_rp_uuid(
                document["node_uuid"], device["id"], region["id"])
    reporter.report(placement_client.Client(conn), document)
    document["compute_rp"] = compute_rp
    return document


@pytest.fixture
def host(tmp_path, placement_server, placement_conn):
    document = _document(placement_conn)
    cyborg = make_cyborg(tmp_path, inventory=False)
    apply_client_conf(cyborg.conf, "placement", placement_server.url)
    inventory_apply.apply_document(
        cyborg.db, {k: v for k, v in document.items() if k != "compute_rp"})
    yield Host(cyborg, placement_conn, document)
    cyborg.db.dispose()


def _error(response):
    return json.loads(response.get_json()["error_message"])["faultstring"]


def test_disable_reserves_every_region_and_enable_frees_them(host):
    assert host.fpga_candidates() == set(host.fpga_rps)
    response = host.cyborg.client.post(host.fpga_url + "/disable",
                                       headers=ADMIN)
    assert response.status_code == 200 and response.get_data() == b""
    assert host.status() == "maintaining"
    for rp_uuid in host.fpga_rps:
        assert host.reserved(rp_uuid) == {"FPGA": (4, 4)}
    # the other device of the host is not touched
    assert host.reserved(host.gpu_rp) == {"PGPU": (0, 1)}
    assert host.fpga_candidates() == set()

    response = host.cyborg.client.post(host.fpga_url + "/enable",
                                       headers=ADMIN)
    assert response.status_code == 200 and response.get_data() == b""
    assert host.status() == "enabled"
    for rp_uuid in host.fpga_rps:
        assert host.reserved(rp_uuid) == {"FPGA": (0, 4)}
    assert host.fpga_candidates() == set(host.fpga_rps)


def test_repeating_disable_is_harmless_and_the_reporter_keeps_it(host):
    for _ in range(2):
        assert host.cyborg.client.post(host.fpga_url + "/disable",
                                       headers=ADMIN).status_code == 200
    # ironic_accel's next report owns totals, not reserved
    document = {k: v for k, v in host.document.items() if k != "compute_rp"}
    reporter.report(placement_client.Client(host.conn), document)
    for rp_uuid in host.fpga_rps:
        assert host.reserved(rp_uuid) == {"FPGA": (4, 4)}


def test_enable_leaves_a_region_in_error_reserved(host):
    assert host.cyborg.client.post(host.fpga_url + "/disable",
                                   headers=ADMIN).status_code == 200
    broken = host.fpga_rps[1]
    host.cyborg.db.run(lambda s: s.execute(
        sa.update(models.Deployable)
        .where(models.Deployable.rp_uuid == broken).values(state="error")))
    assert host.cyborg.client.post(host.fpga_url + "/enable",
                                   headers=ADMIN).status_code == 200
    assert host.reserved(host.fpga_rps[0]) == {"FPGA": (0, 4)}
    assert host.reserved(broken) == {"FPGA": (4, 4)}
    assert host.fpga_candidates() == {host.fpga_rps[0]}


def _dead_endpoint():
    return f"http://127.0.0.1:{free_port()}"


def test_placement_failure_fails_the_call_and_keeps_the_status(
        host, tmp_path, placement_server):
    # the same database, served by an API whose Placement is unreachable
    down = make_cyborg(tmp_path, inventory=False)
    down.db.dispose()
    down.db = host.cyborg.db
    down.app.extensions["cyborg_lite"].db = host.cyborg.db
    apply_client_conf(down.conf, "placement", _dead_endpoint())
    response = down.client.post(host.fpga_url + "/disable", headers=ADMIN)
    assert response.status_code == 503
    message = _error(response)
    assert "Could not disable device" in message
    assert host.fpga_rps[0] in message and "repeat the request" in message
    assert host.status() == "enabled"
    for rp_uuid in host.fpga_rps:
        assert host.reserved(rp_uuid) == {"FPGA": (0, 4)}
    # repeating it once Placement answers again completes it
    assert host.cyborg.client.post(host.fpga_url + "/disable",
                                   headers=ADMIN).status_code == 200
    assert host.status() == "maintaining"
    assert host.fpga_candidates() == set()


def test_without_placement_only_the_status_changes(cyborg):
    fpga = cyborg.client.get("/v2/devices?type=FPGA", headers=ADMIN
                             ).get_json()["devices"][0]
    url = f"/v2/devices/{fpga['uuid']}"
    assert cyborg.client.post(url + "/disable", headers=ADMIN
                              ).status_code == 200
    device = device_db.get(cyborg.db, fpga["uuid"])
    assert device.status == "maintaining"
    assert cyborg.client.post(f"/v2/devices/{uuid.uuid4()}/disable",
                              headers=ADMIN).status_code == 404
