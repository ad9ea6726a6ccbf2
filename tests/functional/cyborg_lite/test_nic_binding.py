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

"""SmartNIC port ARQs over HTTP, on sqlite, MariaDB and PostgreSQL, as
Nova 34 drives them: a bound ARQ's ``attach_handle_info`` names the
handle's ``physical_network`` (Nova copies it into the port's binding
profile and fails without it), and a NIC region with a handle that names
none (a row an older release or ``cyborg import`` wrote) is refused at
bind with a 409 that says why, never bound to fail later."""

import json
import uuid

import sqlalchemy as sa

from cyborg_lite.db import models
from cyborg_lite.inventory import apply as inventory_apply
from tests.fixtures.cyborg import ADMIN
from tests.functional import documents

HOST = "compute-nic.example.org"
ARQS = "/v2/accelerator_requests"


def _fault(response):
    return json.loads(response.get_json()["error_message"])["faultstring"]


def _nic_host(cyborg):
    node = str(uuid.uuid4())
    document = documents.document(HOST, node, [documents.nic(node, 0)])
    inventory_apply.apply_document(cyborg.db, document)
    return document["devices"][0]["regions"][0]


def _port_arq(cyborg):
    profile = cyborg.create_profile([{"resources:CUSTOM_NIC": "1",
                                      "trait:CUSTOM_VF": "required",
                                      "trait:CUSTOM_PHYSNET1": "required"}])
    (arq,) = cyborg.create_arqs(profile["name"])
    return arq["uuid"]


def test_bound_port_arq_names_its_physical_network(cyborg_on_each_db):
    cyborg = cyborg_on_each_db
    region = _nic_host(cyborg)
    arq = _port_arq(cyborg)
    instance = str(uuid.uuid4())
    response = cyborg.bind([arq], region["rp_uuid"], instance, host=HOST)
    assert response.status_code == 202, response.get_data(as_text=True)
    shown = cyborg.client.get(f"{ARQS}/{arq}", headers=ADMIN).get_json()
    assert shown["state"] == "Bound"
    assert shown["attach_handle_info"] == {
        "domain": "0000", "bus": "3b", "device": "02", "function": "0",
        "physical_network": "physnet1"}


def test_nic_handle_without_physical_network_is_refused_at_bind(
        cyborg_on_each_db):
    cyborg = cyborg_on_each_db
    region = _nic_host(cyborg)
    unnamed = region["attach_handles"][1]["pci_address"]
    with cyborg.db.transaction() as session:
        session.execute(sa.update(models.AttachHandle)
                        .where(models.AttachHandle.pci_address == unnamed)
                        .values(physical_network=None))
    arq = _port_arq(cyborg)
    response = cyborg.bind([arq], region["rp_uuid"], str(uuid.uuid4()),
                           host=HOST)
    assert response.status_code == 409, response.get_data(as_text=True)
    fault = _fault(response)
    assert f"handle(s) {unnamed} name no physical_network" in fault
    assert arq in fault and region["rp_uuid"] in fault
    shown = cyborg.client.get(f"{ARQS}/{arq}", headers=ADMIN).get_json()
    assert shown["state"] == "BindFailed"
    assert shown["attach_handle_info"] == {}
