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

"""Device profiles -> Nova's request groups -> real allocation candidates."""

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
    """A reported host whose compute RP carries a trait unique to the test.

    The unique root trait stands in for Nova's COMPUTE_ACCELERATORS and
    keeps other tests' providers in the shared Placement out of the
    candidates.
    """
    root_uuid, name = compute_node
    node = str(uuid.uuid4())
    doc = documents.document(name, node, [
        documents.fpga(node, 0),
        documents.fpga(node, 1, function_id="crc-32"),
        documents.gpu(node, 0), documents.gpu(node, 1)])
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
    rps = [d["regions"][0]["rp_uuid"] for d in doc["devices"]]
    return types.SimpleNamespace(root=root_uuid, marker=marker, doc=doc,
                                 fpga0=rps[0], fpga1=rps[1], gpu0=rps[2],
                                 gpu1=rps[3])


def _candidates(conn, host, groups, **kwargs):
    query = request_groups.querystring(groups, root_required=[host.marker],
                                       **kwargs)
    resp = conn.placement.get(f"/allocation_candidates?{query}",
                              microversion=MV)
    assert resp.status_code == 200, resp.text
    return resp.json()["allocation_requests"]


def _picked(candidates, group=0):
    return {c["mappings"][request_groups.requester_id(group)][0]
            for c in candidates}


def test_fpga_profile_selects_only_fpga_regions(placement_conn, host):
    groups = [{"resources:FPGA": "1", "trait:CUSTOM_FPGA_INTEL": "required"}]
    assert _picked(_candidates(placement_conn, host, groups)) == {
        host.fpga0, host.fpga1}


def test_function_trait_required_and_forbidden(placement_conn, host):
    required = [{"resources:FPGA": "1",
                 "trait:CUSTOM_FPGA_FUNCTION_ID_INTEL_CRC_32": "required"}]
    assert _picked(_candidates(placement_conn, host, required)) == {
        host.fpga1}
    forbidden = [{"resources:FPGA": "1",
                  "trait:CUSTOM_FPGA_FUNCTION_ID_INTEL_CRC_32": "forbidden"}]
    assert _picked(_candidates(placement_conn, host, forbidden)) == {
        host.fpga0}


def test_gpu_profile_by_cyborg_trait(placement_conn, host):
    groups = [{"resources:PGPU": "1", "trait:CUSTOM_NVIDIA_1EB8": "required",
               "accel:ignored": "yes"}]
    assert _picked(_candidates(placement_conn, host, groups)) == {
        host.gpu0, host.gpu1}


def test_amount_larger_than_handles_finds_nothing(placement_conn, host):
    groups = [{"resources:FPGA": "3"}]
    assert _candidates(placement_conn, host, groups) == []


def test_two_groups_isolated_land_on_distinct_providers(placement_conn,
                                                         host):
    groups = [{"resources:FPGA": "1"}, {"resources:FPGA": "1"}]
    candidates = _candidates(placement_conn, host, groups,
                             group_policy="isolate")
    assert candidates
    for c in candidates:
        first = c["mappings"]["device_profile_0"][0]
        second = c["mappings"]["device_profile_1"][0]
        assert first != second
        assert {first, second} == {host.fpga0, host.fpga1}


def test_two_groups_without_policy_are_refused_like_for_nova(placement_conn,
                                                             host):
    query = request_groups.querystring(
        [{"resources:FPGA": "1"}, {"resources:PGPU": "1"}],
        root_required=[host.marker])
    resp = placement_conn.placement.get(f"/allocation_candidates?{query}",
                                        microversion=MV)
    assert resp.status_code == 400
    assert "group_policy" in resp.text


def test_region_reserved_while_programming_is_not_a_candidate(
        placement_conn, host):
    inv = placement_conn.placement.get(
        f"/resource_providers/{host.fpga0}/inventories",
        microversion=MV).json()
    record = dict(inv["inventories"]["FPGA"], reserved=2)
    resp = placement_conn.placement.put(
        f"/resource_providers/{host.fpga0}/inventories", microversion=MV,
        json={"resource_provider_generation":
              inv["resource_provider_generation"],
              "inventories": {"FPGA": record}})
    assert resp.status_code == 200, resp.text
    groups = [{"resources:FPGA": "1"}]
    assert _picked(_candidates(placement_conn, host, groups)) == {host.fpga1}
