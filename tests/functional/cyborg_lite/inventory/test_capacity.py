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

"""Two writers of a region's capacity, against a real Placement.

The reporter writes 1 unit while the document knows no handles and keeps
a larger total cyborg_lite set from the handles discovered in-band;
cyborg_lite never sets a total below what is allocated, and keeps
``reserved <= total``.
"""

import copy
import uuid

from accel_common.placement import client as placement_client
from accel_tools import request_groups
from cyborg_lite.inventory import capacity
from ironic_accel.placement import reporter
from tests.functional import documents

MV = request_groups.MICROVERSION


def _document(host, handles):
    """One single-region FPGA; ``handles`` None: none listed."""
    node = str(uuid.uuid4())
    device = documents.fpga(node, 0, handles=handles or 0)
    if handles is None:
        del device["regions"][0]["attach_handles"]
    return documents.document(host, node, [device])


def _inventory(conn, rp_uuid):
    resp = conn.placement.get(f"/resource_providers/{rp_uuid}/inventories",
                              microversion=MV)
    assert resp.status_code == 200, resp.text
    return resp.json()["inventories"]["FPGA"]


def _put_inventory(conn, rp_uuid, **fields):
    resp = conn.placement.get(f"/resource_providers/{rp_uuid}/inventories",
                              microversion=MV).json()
    record = dict(resp["inventories"]["FPGA"], **fields)
    resp = conn.placement.put(
        f"/resource_providers/{rp_uuid}/inventories", microversion=MV,
        json={"resource_provider_generation":
              resp["resource_provider_generation"],
              "inventories": {"FPGA": record}})
    assert resp.status_code == 200, resp.text


def _allocate(conn, rp_uuid, amount):
    resp = conn.placement.put(
        f"/allocations/{uuid.uuid4()}", microversion=MV,
        json={"allocations": {rp_uuid: {"resources": {"FPGA": amount}}},
              "project_id": uuid.uuid4().hex, "user_id": uuid.uuid4().hex,
              "consumer_generation": None, "consumer_type": "INSTANCE"})
    assert resp.status_code == 204, resp.text


def test_reporter_keeps_in_band_total_while_document_has_no_handles(
        placement_conn, compute_node):
    _, host = compute_node
    unknown = _document(host, None)
    rp_uuid = unknown["devices"][0]["regions"][0]["rp_uuid"]
    client = placement_client.Client(placement_conn)
    reporter.report(client, unknown)
    assert _inventory(placement_conn, rp_uuid)["total"] == 1

    assert capacity.set_capacity(client, rp_uuid, "FPGA", 4) == \
        capacity.UPDATED
    again = placement_client.Client(placement_conn)
    reporter.report(again, unknown)

    inv = _inventory(placement_conn, rp_uuid)
    assert (inv["total"], inv["max_unit"]) == (4, 4)
    assert again.writes == 0

    # Once the document lists handles, its count is the truth again.
    known = _document(host, 2)
    known["node_uuid"] = unknown["node_uuid"]
    known["devices"][0]["regions"][0]["rp_uuid"] = rp_uuid
    reporter.report(placement_client.Client(placement_conn), known)
    inv = _inventory(placement_conn, rp_uuid)
    assert (inv["total"], inv["max_unit"]) == (2, 2)


def test_capacity_is_the_handle_count_even_below_usage(placement_conn,
                                                       compute_node):
    _, host = compute_node
    document = _document(host, None)
    rp_uuid = document["devices"][0]["regions"][0]["rp_uuid"]
    client = placement_client.Client(placement_conn)
    reporter.report(client, document)
    capacity.set_capacity(client, rp_uuid, "FPGA", 4)
    _allocate(placement_conn, rp_uuid, 3)
    # cyborg_lite programs the region: reserved = total.
    _put_inventory(placement_conn, rp_uuid, reserved=4)

    outcome = capacity.set_capacity(client, rp_uuid, "FPGA", 2)

    inv = _inventory(placement_conn, rp_uuid)
    assert outcome == capacity.UPDATED
    # Never an offer of a handle that does not exist: Placement stays over
    # capacity (3 allocated, 2 handles) and refuses new allocations.
    assert (inv["total"], inv["max_unit"], inv["reserved"]) == (2, 2, 2)
    before = client.writes
    assert capacity.set_capacity(client, rp_uuid, "FPGA", 2) == \
        capacity.UNCHANGED
    assert client.writes == before


def test_capacity_leaves_unreported_providers_alone(placement_conn):
    client = placement_client.Client(placement_conn)
    assert capacity.set_capacity(client, str(uuid.uuid4()), "FPGA", 2) == \
        capacity.ABSENT
    assert client.writes == 0


def test_nic_vfs_found_in_band_bring_their_traits(placement_conn,
                                                  compute_node):
    _, host = compute_node
    node = str(uuid.uuid4())
    found = documents.document(host, node, [documents.nic(node, 0)])
    out_of_band = copy.deepcopy(found)
    region = out_of_band["devices"][0]["regions"][0]
    del region["attach_handles"]
    client = placement_client.Client(placement_conn)
    reporter.report(client, out_of_band)
    label = f"{found['devices'][0]['pci_address']}/0"

    outcomes = capacity.offer_handles(client, found, [label])

    assert outcomes == {region["rp_uuid"]: capacity.UPDATED}
    traits = set(placement_conn.placement.get(
        f"/resource_providers/{region['rp_uuid']}/traits",
        microversion=MV).json()["traits"])
    assert {"CUSTOM_VF", "CUSTOM_PHYSNET1", "OWNER_CYBORG"} <= traits
    inv = placement_conn.placement.get(
        f"/resource_providers/{region['rp_uuid']}/inventories",
        microversion=MV).json()["inventories"]["CUSTOM_NIC"]
    assert inv["total"] == 4
    assert capacity.offer_handles(client, found, [label]) == {
        region["rp_uuid"]: capacity.UNCHANGED}
