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

"""Devices the BMC describes without a PCI address (inventory 1.1).

As real BMCs report them (HPE Cray EX, DMTF mockups, NVIDIA HGX): real
Ironic holds a document whose devices have no ``pci_address`` (some not
even vendor/product ids); the Placement reporter names their providers by
device id; cyborg_lite's sync completes them from the host agent's in-band
discovery (sim driver), stores them with their handles, and a bind works.
With the agent gone, the address already known is kept.
"""

import copy
import uuid

import sqlalchemy as sa

from accel_common import inventory
from accel_common.placement import client as placement_client
from accel_tools.embedded import placement as placement_launcher
from cyborg_lite.db import models
from ironic_accel.placement import reporter
from tests.fixtures import cyborg as cyborg_fixtures
from tests.functional import documents
from tests.functional.cyborg_lite.inventory import test_sync_handles as sync


def _as_the_bmc_reports(document):
    """The document without what only in-band discovery knows."""
    redfish = copy.deepcopy(document)
    for device in redfish["devices"]:
        device["pci_address"] = None
        device["redfish_uri"] = (f"/redfish/v1/Systems/Node0/Processors/"
                                 f"{device['id'].upper()}")
        if device["type"] == "GPU":
            device["vendor_id"] = device["product_id"] = None
        for region in device["regions"]:
            region.pop("attach_handles", None)
    redfish["schema_version"] = inventory.version_for(redfish["devices"])
    return inventory.validate(redfish)


def _devices(db, host):
    def query(session):
        return {row.source_id: (row.pci_address,
                                row.std_board_info.get("product_id"))
                for row in session.execute(sa.select(models.Device).where(
                    models.Device.hostname == host)).scalars()}
    return db.run(query)


def test_sync_completes_devices_without_address_and_bind_works(
        ironic_server, baremetal, tmp_path, capsys):
    host = f"noaddr-{uuid.uuid4().hex[:10]}.example.org"
    node = baremetal.create_node(driver="fake-hardware", name=host,
                                 **sync.FAKE_INTERFACES)
    full = documents.document(host, node.id, [
        documents.fpga(node.id, 0, handles=2), documents.gpu(node.id, 0)])
    redfish = _as_the_bmc_reports(full)
    assert redfish["schema_version"] == "1.1"
    baremetal.update_node(node, extra={"accelerators": redfish})

    conn = ironic_server.placement.connection()
    placement_launcher.create_compute_node(conn, name=host)
    reporter.report(placement_client.Client(conn), redfish)
    fpga_region = full["devices"][0]["regions"][0]
    resp = conn.placement.get(f"/resource_providers/{fpga_region['rp_uuid']}",
                              microversion="1.14")
    assert resp.status_code == 200, resp.text
    assert resp.json()["name"] == f"{host}_{full['devices'][0]['id']}"

    cyborg = sync._cyborg(tmp_path, ironic_server, host, full)
    placement_launcher.apply_client_conf(cyborg.conf, "placement",
                                         ironic_server.placement.url)
    try:
        code, result, err = sync._sync(cyborg.conf, host, capsys)
        assert code == 0, err
        report = result["handles"][host]
        assert report["completed"] == {
            d["id"]: d["pci_address"] for d in full["devices"]}
        assert report["incomplete"] == {}
        assert _devices(cyborg.db, host) == {
            d["id"]: (d["pci_address"], d["product_id"])
            for d in full["devices"]}
        vfs = sorted(h["pci_address"] for h in fpga_region["attach_handles"])
        assert sync._handles(cyborg.db, host)[fpga_region["rp_uuid"]] == vfs
        # The capacity the agent found reaches the id-named provider.
        assert report["capacity"][fpga_region["rp_uuid"]] == "updated"

        profile = cyborg.create_profile([{"resources:FPGA": "1"}])
        (arq,) = cyborg.create_arqs(profile["name"])
        instance = str(uuid.uuid4())
        resp = cyborg.bind([arq["uuid"]], fpga_region["rp_uuid"], instance,
                           host=host)
        assert resp.status_code == 202, resp.get_data(as_text=True)
        resp = cyborg.client.get(
            f"/v2/accelerator_requests?instance={instance}"
            "&bind_state=resolved", headers=cyborg_fixtures.NOVA)
        (bound,) = resp.get_json()["arqs"]
        assert sync._bdf(bound["attach_handle_info"]) in vfs

        # The agent is gone: the addresses known stay, nothing is retired.
        known = _devices(cyborg.db, host)
        cyborg.conf.set_override("embedded_agent", False, "programming")
        cyborg.conf.set_override("rpc_timeout", 1, "agent")
        code, result, err = sync._sync(cyborg.conf, host, capsys)
        assert code == 1
        report = result["handles"][host]
        assert sorted(report["incomplete"]) == sorted(
            d["id"] for d in full["devices"])
        assert "no PCI address yet for" in err
        (applied,) = result["applied"]
        assert applied["incomplete"] == []
        assert applied["devices"]["retired"] == 0
        assert applied["devices"]["deleted"] == 0
        assert _devices(cyborg.db, host) == known
    finally:
        sync._close(cyborg)


def test_device_never_seen_with_address_is_not_stored(
        ironic_server, baremetal, tmp_path, capsys):
    host = f"noaddr-{uuid.uuid4().hex[:10]}.example.org"
    node = baremetal.create_node(driver="fake-hardware", name=host,
                                 **sync.FAKE_INTERFACES)
    full = documents.document(host, node.id, [documents.gpu(node.id, 0)])
    baremetal.update_node(node, extra={
        "accelerators": _as_the_bmc_reports(full)})
    cyborg = sync._cyborg(tmp_path, ironic_server, host, full,
                          **{"programming.embedded_agent": False,
                             "agent.rpc_timeout": 1})
    try:
        code, result, err = sync._sync(cyborg.conf, host, capsys)
        assert code == 1
        (applied,) = result["applied"]
        assert applied["incomplete"] == [full["devices"][0]["id"]]
        assert _devices(cyborg.db, host) == {}
    finally:
        sync._close(cyborg)
