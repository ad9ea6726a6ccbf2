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

"""``cyborg-lite-manage inventory import`` of a SmartNIC against a real
Placement: the reporter wrote one unit for the port (the BMC sees no VFs);
the imported document lists its VFs and their physical network, and
Placement then offers every VF to the profile real Cyborg's NIC driver is
written for. A NIC handle without a physical network is refused."""

import copy
import json
import uuid

import pytest

from accel_common.placement import client as placement_client
from accel_tools import request_groups
from cyborg_lite.db import devices as device_db
from cyborg_lite.db import engine as db_engine
from ironic_accel.placement import reporter
from tests.functional import documents
from tests.functional.cyborg_lite.inventory import commands

MV = request_groups.MICROVERSION
VF_PHYSNET1 = [{"resources:CUSTOM_NIC": "1", "trait:CUSTOM_VF": "required",
                "trait:CUSTOM_PHYSNET1": "required"}]


def _provider(conn, rp_uuid):
    inv = conn.placement.get(f"/resource_providers/{rp_uuid}/inventories",
                             microversion=MV).json()["inventories"]
    traits = conn.placement.get(f"/resource_providers/{rp_uuid}/traits",
                                microversion=MV).json()["traits"]
    return inv["CUSTOM_NIC"]["total"], set(traits)


def _candidates(conn, rp_uuid, groups, amount="1"):
    groups = [dict(groups[0], **{"resources:CUSTOM_NIC": amount})]
    query = request_groups.querystring(groups)
    resp = conn.placement.get(f"/allocation_candidates?{query}",
                              microversion=MV)
    assert resp.status_code == 200, resp.text
    return [c for c in resp.json()["allocation_requests"]
            if rp_uuid in c["allocations"]]


@pytest.fixture
def host(tmp_path, config_file, placement_conn, compute_node):
    """A NIC the reporter knows without handles, and the document with
    its 4 VFs on physnet1."""
    _, name = compute_node
    node = str(uuid.uuid4())
    document = documents.document(name, node, [documents.nic(node, 0)])
    out_of_band = copy.deepcopy(document)
    del out_of_band["devices"][0]["regions"][0]["attach_handles"]
    client = placement_client.Client(placement_conn)
    reporter.report(client, out_of_band)
    assert commands.run_manage(config_file, "db", "sync") == 0
    return document, out_of_band, client


def test_import_offers_every_vf_with_its_nic_traits(
        tmp_path, config_file, placement_conn, host, capsys):
    document, out_of_band, client = host
    rp_uuid = document["devices"][0]["regions"][0]["rp_uuid"]
    assert _provider(placement_conn, rp_uuid)[0] == 1

    capsys.readouterr()
    commands.import_document(tmp_path, config_file, document)
    out = capsys.readouterr().out
    assert json.loads(out[out.rindex("\n{"):])["capacity"] == {
        rp_uuid: "updated"}
    total, traits = _provider(placement_conn, rp_uuid)
    assert total == 4
    assert {"CUSTOM_VF", "CUSTOM_PHYSNET1"} <= traits
    assert _candidates(placement_conn, rp_uuid, VF_PHYSNET1, amount="4")

    # NOTE(test): the reporter's next pass (still no handles) keeps them.
    reporter.report(client, out_of_band)
    total, traits = _provider(placement_conn, rp_uuid)
    assert total == 4 and {"CUSTOM_VF", "CUSTOM_PHYSNET1"} <= traits


def test_import_refuses_a_nic_handle_without_physical_network(
        tmp_path, config_file, placement_conn, host, capsys):
    document = copy.deepcopy(host[0])
    region = document["devices"][0]["regions"][0]
    del region["attach_handles"][2]["physical_network"]
    capsys.readouterr()
    assert commands.run_manage(
        config_file, "inventory", "import",
        commands.write_document(tmp_path, document)) == 1
    err = capsys.readouterr().err
    address = region["attach_handles"][2]["pci_address"]
    assert (f"NIC region {document['devices'][0]['pci_address']}/0 handle "
            f"{address} has no physical_network") in err
    assert "nothing was changed" in err
    db = db_engine.Database(f"sqlite:///{tmp_path}/cyborg_lite.sqlite")
    try:
        assert device_db.get_all(db) == []
        assert _provider(placement_conn, region["rp_uuid"])[0] == 1
    finally:
        db.dispose()


def test_a_port_moved_to_another_physnet_loses_the_old_trait(
        tmp_path, config_file, placement_conn, host, capsys):
    document = host[0]
    rp_uuid = document["devices"][0]["regions"][0]["rp_uuid"]
    commands.import_document(tmp_path, config_file, document)
    moved = copy.deepcopy(document)
    for handle in moved["devices"][0]["regions"][0]["attach_handles"]:
        handle["physical_network"] = "physnet2"

    commands.import_document(tmp_path, config_file, moved)

    traits = _provider(placement_conn, rp_uuid)[1]
    assert "CUSTOM_PHYSNET2" in traits and "CUSTOM_PHYSNET1" not in traits
    assert not _candidates(placement_conn, rp_uuid, VF_PHYSNET1)
