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

"""``cyborg-lite-manage inventory sync`` with documents that carry no
attach handles (as ironic_accel writes them out of band).

Real Ironic holds the node's document; cyborg_lite's embedded agent (sim
driver) discovers the handles in-band, and the sync takes them. With the
agent gone, the handles already known stay and the command says so.
"""

import argparse
import copy
import json
import uuid

from keystoneauth1 import loading as ks_loading
import sqlalchemy as sa

from accel_common.placement import client as placement_client
from accel_tools import request_groups
from accel_tools.embedded import placement as placement_launcher
from cyborg_lite.cmd.manage import inventory as inventory_manage
from cyborg_lite.db import models
from ironic_accel.placement import reporter
from tests.fixtures import cyborg as cyborg_fixtures
from tests.functional import documents

MV = request_groups.MICROVERSION
FAKE_INTERFACES = {"boot_interface": "fake", "deploy_interface": "fake",
                   "power_interface": "fake", "management_interface": "fake",
                   "network_interface": "noop"}


def _bdf(info):
    return "{:04x}:{:02x}:{:02x}.{:x}".format(
        *(int(str(info[key]), 16)
          for key in ("domain", "bus", "device", "function")))


def _without_handles(document):
    stripped = copy.deepcopy(document)
    for device in stripped["devices"]:
        for region in device["regions"]:
            region.pop("attach_handles", None)
    return stripped


def _host_with_node(baremetal):
    """A node whose Ironic document lists an FPGA (2 VFs) and a GPU, all
    without attach handles; returns ``(host, full document)``."""
    host = f"sync-{uuid.uuid4().hex[:10]}.example.org"
    node = baremetal.create_node(driver="fake-hardware", name=host,
                                 **FAKE_INTERFACES)
    document = documents.document(host, node.id, [
        documents.fpga(node.id, 0, handles=2), documents.gpu(node.id, 0)])
    baremetal.update_node(node, extra={
        "accelerators": _without_handles(document)})
    return host, document


def _cyborg(tmp_path, ironic_server, host, document, **overrides):
    """cyborg_lite whose sim agent serves ``host`` with ``document``'s
    devices (handles included) and whose ``[ironic]`` is the test Ironic."""
    sim_inventory = tmp_path / "sim-inventory.json"
    sim_inventory.write_text(json.dumps(document))
    options = {"agent.host": host,
               "agent.sim_state_dir": str(tmp_path / "sim"),
               "agent.sim_inventory_file": str(sim_inventory),
               "agent.rpc_timeout": 5,
               "programming.reconcile_on_start": False,
               "programming.reconcile_interval": 0}
    options.update(overrides)
    cyborg = cyborg_fixtures.make_cyborg(tmp_path, inventory=False,
                                         **options)
    ks_loading.register_auth_conf_options(cyborg.conf, "ironic")
    cyborg.conf.set_override("auth_type", "none", "ironic")
    cyborg.conf.set_override("endpoint_override", ironic_server.url,
                             "ironic")
    return cyborg


def _sync(conf, host, capsys):
    code = inventory_manage.sync_ironic_command(
        conf, argparse.Namespace(host=host))
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def _handles(db, host):
    """``{rp uuid: [handle pci address]}`` of ``host``'s deployables."""
    def query(session):
        rows = session.execute(
            sa.select(models.Deployable.rp_uuid,
                      models.AttachHandle.pci_address)
            .join(models.AttachHandle,
                  models.AttachHandle.deployable_id == models.Deployable.id)
            .join(models.Device,
                  models.Device.id == models.Deployable.device_id)
            .where(models.Device.hostname == host))
        found = {}
        for rp_uuid, address in rows:
            found.setdefault(rp_uuid, []).append(address)
        return {k: sorted(v) for k, v in found.items()}
    return db.run(query)


def _close(cyborg):
    services = cyborg.app.extensions["cyborg_lite"]
    services.stop()
    services.notifier.shutdown()
    cyborg.db.dispose()


def _inventory(conn, rp_uuid, rc):
    resp = conn.placement.get(f"/resource_providers/{rp_uuid}/inventories",
                              microversion=MV)
    assert resp.status_code == 200, resp.text
    return resp.json()["inventories"][rc]


def test_sync_takes_handles_from_agent_and_bind_works(
        ironic_server, baremetal, tmp_path, capsys):
    host, document = _host_with_node(baremetal)
    conn = ironic_server.placement.connection()
    placement_launcher.create_compute_node(conn, name=host)
    client = placement_client.Client(conn)
    # The conductor's report: no handles known, one unit per region.
    reporter.report(client, _without_handles(document))
    fpga_region = document["devices"][0]["regions"][0]
    gpu_region = document["devices"][1]["regions"][0]
    assert _inventory(conn, fpga_region["rp_uuid"], "FPGA")["total"] == 1
    cyborg = _cyborg(tmp_path, ironic_server, host, document)
    placement_launcher.apply_client_conf(cyborg.conf, "placement",
                                         ironic_server.placement.url)
    try:
        code, result, err = _sync(cyborg.conf, host, capsys)

        assert code == 0, err
        assert result["not_in_placement"] == {}
        report = result["handles"][host]
        assert report["source"] == "agent"
        assert sorted(report["filled"]) == ["0000:5e:00.0/0",
                                            "0000:af:00.0/0"]
        assert report["kept"] == [] and report["error"] is None
        assert f"{host}: attach handles from the agent for 2 region(s)" in err
        vfs = sorted(h["pci_address"]
                     for h in fpga_region["attach_handles"])
        assert _handles(cyborg.db, host)[fpga_region["rp_uuid"]] == vfs

        # Placement offers what the agent found ...
        assert report["capacity"] == {fpga_region["rp_uuid"]: "updated",
                                      gpu_region["rp_uuid"]: "unchanged"}
        fpga_inv = _inventory(conn, fpga_region["rp_uuid"], "FPGA")
        assert (fpga_inv["total"], fpga_inv["max_unit"]) == (2, 2)
        # ... and the conductor's next report (still no handles) keeps it,
        # writing nothing.
        rereport = placement_client.Client(conn)
        reporter.report(rereport, _without_handles(document))
        assert rereport.writes == 0
        assert _inventory(conn, fpga_region["rp_uuid"], "FPGA")["total"] == 2

        profile = cyborg.create_profile([{"resources:FPGA": "1"}])
        (arq,) = cyborg.create_arqs(profile["name"])
        instance = str(uuid.uuid4())
        resp = cyborg.bind([arq["uuid"]], fpga_region["rp_uuid"], instance,
                           host=host)
        assert resp.status_code == 202, resp.get_data(as_text=True)
        resp = cyborg.client.get(
            f"/v2/accelerator_requests?instance={instance}"
            "&bind_state=resolved", headers=cyborg_fixtures.NOVA)
        assert resp.status_code == 200, resp.get_data(as_text=True)
        (bound,) = resp.get_json()["arqs"]
        assert _bdf(bound["attach_handle_info"]) in vfs
    finally:
        _close(cyborg)


def test_sync_with_agent_down_keeps_known_handles(
        ironic_server, baremetal, tmp_path, capsys):
    host, document = _host_with_node(baremetal)
    cyborg = _cyborg(tmp_path, ironic_server, host, document)
    try:
        code, _, err = _sync(cyborg.conf, host, capsys)
        assert code == 0, err
        known = _handles(cyborg.db, host)
        assert all(known.values())

        # The agent is gone (no embedded agent, nobody serves the host).
        cyborg.conf.set_override("embedded_agent", False, "programming")
        cyborg.conf.set_override("rpc_timeout", 1, "agent")
        code, result, err = _sync(cyborg.conf, host, capsys)

        assert code == 1
        report = result["handles"][host]
        assert report["source"] == "kept"
        assert "did not answer discover" in report["error"]
        assert sorted(report["kept"]) == ["0000:5e:00.0/0", "0000:af:00.0/0"]
        assert f"{host}: known attach handles kept for 2 region(s)" in err
        assert _handles(cyborg.db, host) == known
        (applied,) = result["applied"]
        assert applied["attach_handles"]["deleted"] == 0
        assert applied["attach_handles"]["retired"] == 0
    finally:
        _close(cyborg)


def test_sync_prefers_document_handles(ironic_server, baremetal, tmp_path,
                                       capsys):
    host, document = _host_with_node(baremetal)
    node = baremetal.find_node(host)
    baremetal.update_node(node, extra={"accelerators": document})
    # The agent would report other VFs: the document's win, it is not
    # even asked.
    cyborg = _cyborg(tmp_path, ironic_server, host, document,
                     **{"programming.embedded_agent": False,
                        "agent.rpc_timeout": 1})
    try:
        code, result, err = _sync(cyborg.conf, host, capsys)
        assert code == 0, err
        assert result["handles"][host]["source"] == "document"
        assert f"{host}: attach handles from the inventory document" in err
        fpga_region = document["devices"][0]["regions"][0]
        assert _handles(cyborg.db, host)[fpga_region["rp_uuid"]] == sorted(
            h["pci_address"] for h in fpga_region["attach_handles"])
    finally:
        _close(cyborg)
