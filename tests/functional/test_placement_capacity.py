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

"""Placement never gives more of a region than its total, as deployed.

Issue 20's "six allocations on a region whose inventory is four": Placement
16 retries an allocation write that lost a provider-generation race inside
the same database transaction, and that retry can claim beyond capacity on
MariaDB and on PostgreSQL (``doc/source/install/nova.rst``, "Placement: one
allocation write, no server-side retry"). These tests run the real
Placement the way a deployment does (gunicorn, several workers with threads,
a real database) with the setting the install guide asks for, and race
Nova-shaped claims (``PUT /allocations`` at 1.36, VCPU on the compute node
and FPGA on one of its regions, retried on ``placement.concurrent_update``
as Nova's ``claim_resources`` does) for a region's last handles.
"""

import concurrent.futures
import uuid

import pytest

from tests.fixtures import databases
from tests.fixtures import placement as placement_fixtures

REGION_HANDLES = 4
CLAIMS = 12
ROUNDS = 6
#: Nova's ``claim_resources`` tries four times on a generation conflict.
NOVA_ATTEMPTS = 4
CLAIM_VERSION = {"openstack-api-version": "placement 1.36"}


@pytest.fixture(params=[
    pytest.param("mariadb", marks=pytest.mark.mariadb),
    pytest.param("postgresql", marks=pytest.mark.postgresql)])
def deployed_placement(request, tmp_path):
    """A real Placement on a real database, configured as documented."""
    with databases.database(request.param, tmp_path) as url, \
            placement_fixtures.threaded_placement(
                tmp_path / "placement", url,
                {"placement": {"allocation_conflict_retry_count": 1}}) as api:
        yield api


def _tree(api):
    """A compute node with plenty of VCPU and one region of 4 handles."""
    root, region = str(uuid.uuid4()), str(uuid.uuid4())
    api.post("/resource_providers", {"name": root, "uuid": root})
    api.post("/resource_providers", {"name": region, "uuid": region,
                                     "parent_provider_uuid": root})
    for rp, inventories in ((root, {"VCPU": {"total": 64}}),
                            (region, {"FPGA": {"total": REGION_HANDLES,
                                               "max_unit": REGION_HANDLES}})):
        generation = api.get(f"/resource_providers/{rp}")["generation"]
        api.put(f"/resource_providers/{rp}/inventories", {
            "resource_provider_generation": generation,
            "inventories": inventories})
    return root, region


def _claim(api, root, region):
    """One boot's claim, as Nova's scheduler makes it; True when granted."""
    body = {"allocations": {root: {"resources": {"VCPU": 1}},
                            region: {"resources": {"FPGA": 1}}},
            "project_id": str(uuid.uuid4()), "user_id": str(uuid.uuid4()),
            "consumer_generation": None}
    consumer = str(uuid.uuid4())
    for _ in range(NOVA_ATTEMPTS):
        rsp = api.request("PUT", f"/allocations/{consumer}", body,
                          headers=CLAIM_VERSION)
        if rsp.status_code == 204:
            return True
        assert rsp.status_code == 409, rsp.text
        if rsp.json()["errors"][0]["code"] != "placement.concurrent_update":
            return False
    return False


def test_racing_claims_never_take_more_of_a_region_than_its_total(
        deployed_placement):
    api = deployed_placement
    for _ in range(ROUNDS):
        root, region = _tree(api)
        with concurrent.futures.ThreadPoolExecutor(CLAIMS) as pool:
            granted = sum(pool.map(lambda _: _claim(api, root, region),
                                   range(CLAIMS)))
        used = api.get(f"/resource_providers/{region}/usages")[
            "usages"]["FPGA"]
        assert used == granted <= REGION_HANDLES, (used, granted)
        # NOTE(tests): and the region was not left half empty by claims
        # that gave up on conflicts, which Nova would turn into boots on
        # another host (or "No valid host").
        assert granted == REGION_HANDLES, granted
