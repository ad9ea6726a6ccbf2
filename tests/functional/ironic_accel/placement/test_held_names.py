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

"""A region's provider name held by a provider the reporter does not own
(real Cyborg's for the same card), against a real Placement: the region
waits under a held name, keeps its uuid and allocations, and takes its
name once the other provider is gone."""

import uuid

import pytest

from accel_common.placement import client as placement_client
from accel_common.placement import tree
from ironic_accel import exception as accel_exception
from ironic_accel.placement import reporter
from tests.functional import documents

MV = "1.39"


def _call(conn, method, url, body=None):
    resp = conn.placement.request(url, method, json=body, microversion=MV)
    assert resp.status_code in (200, 201, 204), resp.text
    return resp.json() if resp.content else None


def _name(conn, rp_uuid):
    return _call(conn, "GET", f"/resource_providers/{rp_uuid}")["name"]


def _cyborg_provider(conn, root_uuid, name):
    """A provider as real Cyborg makes it (its uuid derived from its name),
    with one allocation on it; returns its uuid."""
    rp_uuid = str(uuid.uuid3(uuid.NAMESPACE_DNS, name))
    _call(conn, "POST", "/resource_providers", {
        "uuid": rp_uuid, "name": name, "parent_provider_uuid": root_uuid})
    _call(conn, "PUT", "/traits/CUSTOM_FPGA_INTEL")
    _call(conn, "PUT", f"/resource_providers/{rp_uuid}/traits", {
        "resource_provider_generation": 0,
        "traits": ["OWNER_CYBORG", "CUSTOM_FPGA_INTEL"]})
    _call(conn, "PUT", f"/resource_providers/{rp_uuid}/inventories", {
        "resource_provider_generation": 1,
        "inventories": {"FPGA": {"total": 1}}})
    return rp_uuid


def _allocate(conn, rp_uuid, rc):
    consumer = str(uuid.uuid4())
    _call(conn, "PUT", f"/allocations/{consumer}", {
        "allocations": {rp_uuid: {"resources": {rc: 1}}},
        "project_id": str(uuid.uuid4()), "user_id": str(uuid.uuid4()),
        "consumer_generation": None, "consumer_type": "INSTANCE"})
    return consumer


def _allocations(conn, consumer):
    body = _call(conn, "GET", f"/allocations/{consumer}")
    return {rp: a["resources"] for rp, a in body["allocations"].items()}


@pytest.fixture
def held(placement_conn, compute_node):
    """A host whose first FPGA's name Cyborg's provider holds, reported."""
    root_uuid, host = compute_node
    doc = documents.document(host)
    device = doc["devices"][0]
    name = f"{host}_{device['pci_address']}"
    cyborg_rp = _cyborg_provider(placement_conn, root_uuid, name)
    cyborg_consumer = _allocate(placement_conn, cyborg_rp, "FPGA")
    client = placement_client.Client(placement_conn)
    result = reporter.report(client, doc)
    return dict(root=root_uuid, doc=doc, name=name, client=client,
                result=result, cyborg_rp=cyborg_rp,
                cyborg_consumer=cyborg_consumer,
                rp_uuid=device["regions"][0]["rp_uuid"])


def test_region_waits_under_the_held_name(placement_conn, held):
    result = held["result"]
    assert len(result.created) == 4 and result.held == [held["rp_uuid"]]
    assert _name(placement_conn, held["rp_uuid"]) == (
        f"{held['name']}{tree.HELD_NAME_SUFFIX}")
    assert _call(placement_conn, "GET",
                 f"/resource_providers/{held['rp_uuid']}/inventories"
                 )["inventories"]["FPGA"]["total"] == 2
    # Cyborg's provider is not the reporter's: untouched.
    assert _name(placement_conn, held["cyborg_rp"]) == held["name"]
    assert _allocations(placement_conn, held["cyborg_consumer"]) == {
        held["cyborg_rp"]: {"FPGA": 1}}

    # While the name is held, a report writes nothing.
    again = reporter.report(held["client"], held["doc"])
    assert again.writes == 0 and again.held == [held["rp_uuid"]]
    assert reporter.report(placement_client.Client(placement_conn),
                           held["doc"]).writes == 0


def test_region_takes_its_name_once_the_holder_is_gone(placement_conn,
                                                       held):
    rp_uuid = held["rp_uuid"]
    ours = _allocate(placement_conn, rp_uuid, "FPGA")
    # What the adoption does: Cyborg's allocation moves to the region and
    # Cyborg's provider is deleted.
    consumer = held["cyborg_consumer"]
    body = _call(placement_conn, "GET", f"/allocations/{consumer}")
    _call(placement_conn, "PUT", f"/allocations/{consumer}", {
        "allocations": {rp_uuid: {"resources": {"FPGA": 1}}},
        "project_id": body["project_id"], "user_id": body["user_id"],
        "consumer_generation": body["consumer_generation"],
        "consumer_type": "INSTANCE"})
    _call(placement_conn, "DELETE",
          f"/resource_providers/{held['cyborg_rp']}")

    result = reporter.report(held["client"], held["doc"])
    assert result.updated == [rp_uuid] and result.held == []
    assert result.writes == 1
    assert _name(placement_conn, rp_uuid) == held["name"]
    for who in (ours, consumer):
        assert _allocations(placement_conn, who) == {rp_uuid: {"FPGA": 1}}
    assert reporter.report(held["client"], held["doc"]).writes == 0


def test_name_held_by_another_of_the_reporters_is_a_clear_error(
        placement_conn, compute_node):
    # A provider carrying OWNER_CYBORG, not Cyborg's: reported by
    # ironic-accel for another node naming the same host.
    root_uuid, host = compute_node
    doc = documents.document(host)
    device = doc["devices"][0]
    other = documents.document(host)["devices"][0]["regions"][0]["rp_uuid"]
    _call(placement_conn, "POST", "/resource_providers", {
        "uuid": other, "name": f"{host}_{device['pci_address']}",
        "parent_provider_uuid": root_uuid})
    _call(placement_conn, "PUT", f"/resource_providers/{other}/traits", {
        "resource_provider_generation": 0, "traits": ["OWNER_CYBORG"]})
    with pytest.raises(accel_exception.ReportError,
                       match="reported by ironic-accel for another node"):
        reporter.report(placement_client.Client(placement_conn), doc)
