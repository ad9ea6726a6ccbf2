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

"""Ironic node document -> Placement -> allocation candidates -> bind.

Real Ironic, real Placement, real cyborg_lite (gunicorn): the document
stored on an Ironic node is read back through openstacksdk's baremetal
proxy, reported to Placement and applied to cyborg_lite's database; a device
profile turned into Nova's query picks a provider, and binding an ARQ to
that provider resolves to a PCI address from the node's document.
"""

import time
import uuid

import requests

from accel_common import node_documents
from accel_common.placement import client as placement_client
from accel_tools import request_groups
from cyborg_lite.db import engine as db_engine
from cyborg_lite.inventory import ironic as ironic_inventory
from ironic_accel.placement import reporter
from tests.functional import documents

MV = request_groups.MICROVERSION
FAKE_INTERFACES = {"boot_interface": "fake", "deploy_interface": "fake",
                   "power_interface": "fake", "management_interface": "fake",
                   "network_interface": "noop"}


def _headers():
    return {"X-Project-Id": uuid.uuid4().hex, "X-User-Id": uuid.uuid4().hex,
            "X-Roles": "member,reader", "X-Service-Roles": "service"}


def _bdf(info):
    return "{:04x}:{:02x}:{:02x}.{:x}".format(
        *(int(str(info[key]), 16)
          for key in ("domain", "bus", "device", "function")))


def _mark_root(conn, root_uuid):
    """A unique root trait (Nova's COMPUTE_ACCELERATORS stand-in)."""
    marker = f"CUSTOM_E2E_{uuid.uuid4().hex.upper()}"
    conn.placement.put(f"/traits/{marker}", microversion=MV)
    gen = conn.placement.get(f"/resource_providers/{root_uuid}",
                             microversion=MV).json()["generation"]
    resp = conn.placement.put(
        f"/resource_providers/{root_uuid}/traits", microversion=MV,
        json={"resource_provider_generation": gen,
              "traits": [marker, "COMPUTE_ACCELERATORS"]})
    assert resp.status_code == 200, resp.text
    return marker


def test_ironic_document_to_bound_arq(ironic_server, baremetal,
                                      placement_conn, compute_node,
                                      cyborg_server_factory):
    root_uuid, host = compute_node
    node = baremetal.create_node(driver="fake-hardware",
                                 name=f"e2e-{uuid.uuid4().hex[:8]}",
                                 **FAKE_INTERFACES)
    stratix = documents.fpga(node.id, 1, handles=2)
    stratix["model"] = "PAC Stratix10"
    doc = documents.document(host, node.id, [
        stratix, documents.fpga(node.id, 0, handles=2),
        documents.gpu(node.id, 0)])
    baremetal.update_node(node, extra={"accelerators": doc})

    # cyborg_lite reads the document back from Ironic ...
    selection = node_documents.documents_from_ironic(
        ironic_server.connection(), host=host)
    assert selection.documents == [doc]
    client = placement_client.Client(placement_conn)
    assert ironic_inventory.missing_providers(client, doc) == sorted(
        r["rp_uuid"] for d in doc["devices"] for r in d["regions"])
    # ... ironic_accel reports it to Placement ...
    reporter.report(client, selection.documents[0])
    marker = _mark_root(placement_conn, root_uuid)
    # ... and cyborg_lite applies it to its database.
    server = cyborg_server_factory(inventories=[], workers=1)
    summary = ironic_inventory.sync(db_engine.Database(server.db_url),
                                 ironic_server.connection(), host=host,
                                 placement=client)
    assert summary["skipped"] == {}
    assert summary["not_in_placement"] == {}
    assert len(summary["applied"]) == 1

    api = server.url + "/v2"
    dp_name = f"e2e-{uuid.uuid4().hex[:8]}"
    groups = [{"resources:FPGA": "1",
               "trait:CUSTOM_FPGA_INTEL_PAC_ARRIA10": "required"}]
    resp = requests.post(f"{api}/device_profiles", timeout=30,
                         json=[{"name": dp_name, "groups": groups}])
    assert resp.status_code == 201, resp.text

    # The scheduler's view: Nova's query built from the profile's groups.
    resp = requests.get(f"{api}/device_profiles", params={"name": dp_name},
                        timeout=30)
    (profile,) = resp.json()["device_profiles"]
    query = request_groups.querystring(profile["groups"],
                                       root_required=[marker])
    resp = placement_conn.placement.get(f"/allocation_candidates?{query}",
                                        microversion=MV)
    assert resp.status_code == 200, resp.text
    candidates = resp.json()["allocation_requests"]
    picked = {c["mappings"]["device_profile_0"][0] for c in candidates}
    arria_region = doc["devices"][1]["regions"][0]
    assert picked == {arria_region["rp_uuid"]}

    # The conductor's view: create the ARQ and bind it to that provider.
    headers = _headers()
    resp = requests.post(f"{api}/accelerator_requests", headers=headers,
                         json={"device_profile_name": dp_name}, timeout=30)
    assert resp.status_code == 201, resp.text
    (arq,) = resp.json()["arqs"]
    instance = str(uuid.uuid4())
    resp = requests.patch(f"{api}/accelerator_requests", headers=headers,
                          timeout=30, json={arq["uuid"]: [
                              {"op": "add", "path": "/hostname",
                               "value": host},
                              {"op": "add", "path": "/device_rp_uuid",
                               "value": arria_region["rp_uuid"]},
                              {"op": "add", "path": "/instance_uuid",
                               "value": instance}]})
    assert resp.status_code == 202, resp.text

    deadline = time.monotonic() + 30
    while True:
        resp = requests.get(f"{api}/accelerator_requests", headers=headers,
                            params={"instance": instance,
                                    "bind_state": "resolved"}, timeout=30)
        if resp.status_code != 423 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert resp.status_code == 200, resp.text
    (bound,) = resp.json()["arqs"]
    assert bound["state"] == "Bound"
    assert bound["device_rp_uuid"] == arria_region["rp_uuid"]
    assert _bdf(bound["attach_handle_info"]) in {
        h["pci_address"] for h in arria_region["attach_handles"]}
