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

"""SmartNIC device profiles -> Nova's request groups -> real allocation
candidates: the profile real Cyborg's NIC driver is written for
(``resources:CUSTOM_NIC``, ``trait:CUSTOM_VF``, ``trait:CUSTOM_<PHYSNET>``)
lands on a VF of the port wired to that physical network, and Placement
offers every VF."""

import types
import uuid

import pytest

from accel_common.placement import client as placement_client
from accel_tools import request_groups
from ironic_accel.placement import reporter
from tests.functional import documents

MV = request_groups.MICROVERSION


@pytest.fixture
def host(placement_conn, compute_node):
    """A host with a two-port SmartNIC (port p0 on physnet1 and p1 on
    physnet2, 4 VFs each) and a NIC passed through whole on physnet1; its
    compute RP carries a trait unique to the test (see
    test_allocation_candidates)."""
    root_uuid, name = compute_node
    node = str(uuid.uuid4())
    doc = documents.document(name, node, [
        documents.nic(node, 0, regions={"p0": "physnet1", "p1": "physnet2"}),
        documents.nic(node, 1, vfs=0)])
    reporter.report(placement_client.Client(placement_conn), doc)
    marker = f"CUSTOM_T_{uuid.uuid4().hex.upper()}"
    placement_conn.placement.put(f"/traits/{marker}", microversion=MV)
    gen = placement_conn.placement.get(
        f"/resource_providers/{root_uuid}", microversion=MV).json()[
            "generation"]
    resp = placement_conn.placement.put(
        f"/resource_providers/{root_uuid}/traits", microversion=MV,
        json={"resource_provider_generation": gen, "traits": [marker]})
    assert resp.status_code == 200, resp.text
    rps = [r["rp_uuid"] for d in doc["devices"] for r in d["regions"]]
    return types.SimpleNamespace(marker=marker, p0=rps[0], p1=rps[1],
                                 whole=rps[2])


def _picked(conn, host, groups):
    query = request_groups.querystring(groups, root_required=[host.marker])
    resp = conn.placement.get(f"/allocation_candidates?{query}",
                              microversion=MV)
    assert resp.status_code == 200, resp.text
    return {c["mappings"][request_groups.requester_id(0)][0]
            for c in resp.json()["allocation_requests"]}


def test_cyborg_vf_profile_lands_on_the_port_of_its_physnet(placement_conn,
                                                            host):
    groups = [{"resources:CUSTOM_NIC": "1", "trait:CUSTOM_VF": "required",
               "trait:CUSTOM_PHYSNET1": "required"}]
    assert _picked(placement_conn, host, groups) == {host.p0}
    groups[0].pop("trait:CUSTOM_PHYSNET1")
    groups[0]["trait:CUSTOM_PHYSNET2"] = "required"
    assert _picked(placement_conn, host, groups) == {host.p1}


def test_every_vf_of_a_port_is_offered(placement_conn, host):
    inventory = placement_conn.placement.get(
        f"/resource_providers/{host.p0}/inventories",
        microversion=MV).json()["inventories"]["CUSTOM_NIC"]
    assert (inventory["total"], inventory["max_unit"]) == (4, 4)
    groups = [{"resources:CUSTOM_NIC": "4", "trait:CUSTOM_VF": "required",
               "trait:CUSTOM_PHYSNET1": "required"}]
    assert _picked(placement_conn, host, groups) == {host.p0}


def test_whole_port_profile_lands_on_the_passed_through_port(
        placement_conn, host):
    groups = [{"resources:CUSTOM_NIC": "1", "trait:CUSTOM_PF": "required",
               "trait:CUSTOM_PHYSNET1": "required"}]
    assert _picked(placement_conn, host, groups) == {host.whole}
