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

"""The two halves end to end, with the document written by the conductor.

A real Ironic whose ``[placement]`` group points at a real Placement
manages a node on the BMC emulator: the plugin's verify step writes the
inventory document and the conductor reports the node's regions to
Placement. cyborg_lite then syncs from Ironic, taking the attach handles
its agent (sim driver, embedded) discovered in-band; Nova's query for a
device profile picks a region, and a Nova-style bind to that region
resolves to a BDF of that region. (tests/functional/e2e/
test_end_to_end.py covers the same read side with a document the test
writes itself.)
"""

import json
import uuid

from accel_common import inventory
from accel_common.placement import client as placement_client
from accel_tools import request_groups
from accel_tools.embedded import ironic as ironic_launcher
from accel_tools.embedded import placement as placement_launcher
from cyborg_lite.agent import rpcapi
from cyborg_lite.agent import service as agent_service
from cyborg_lite.inventory import ironic as ironic_inventory
from tests.fixtures import cyborg as cyborg_fixtures

MV = request_groups.MICROVERSION
ARRIA10 = "CUSTOM_FPGA_INTEL_PAC_ARRIA10"


def _bdf(info):
    return "{:04x}:{:02x}:{:02x}.{:x}".format(
        *(int(str(info[key]), 16)
          for key in ("domain", "bus", "device", "function")))


def _embedded_agent(tmp_path, host):
    """cyborg_lite's conf with the sim agent of ``host`` serving in-process;
    the sim devices are the example inventory's, whose PCI addresses are
    the emulator's default devices (so the agent's handles match)."""
    sim_inventory = tmp_path / "sim-inventory.json"
    sim_inventory.write_text(json.dumps(
        cyborg_fixtures.load_example_inventory(host)))
    return {"agent.host": host, "agent.sim_state_dir": str(tmp_path / "sim"),
            "agent.sim_inventory_file": str(sim_inventory),
            "agent.rpc_timeout": 10}


def test_conductor_report_to_nova_style_bind(ironic_server, baremetal,
                                             bmc_emulator, tmp_path):
    placement = ironic_server.placement.connection()
    host = f"e2e-{uuid.uuid4().hex[:10]}.example.org"
    marker = f"CUSTOM_E2E_{uuid.uuid4().hex.upper()}"
    root_uuid, _ = placement_launcher.create_compute_node(
        placement, name=host, traits=["COMPUTE_ACCELERATORS", marker])

    # Ironic: manage runs the plugin's verify step; the conductor writes
    # the document and reports it to Placement on its own.
    node = ironic_launcher.enroll(baremetal, bmc_emulator, name=host)
    node = ironic_launcher.manage(baremetal, node)
    assert node.provision_state == "manageable", node.last_error
    document = node.extra[inventory.NODE_EXTRA_KEY]
    assert document["host"] == host
    fpga = next(d for d in document["devices"] if d["type"] == "FPGA")
    region_rps = {r["rp_uuid"] for r in fpga["regions"]}
    assert len(region_rps) == 2
    client = placement_client.Client(placement)
    assert ironic_inventory.missing_providers(client, document) == []
    for rp_uuid in region_rps:
        resp = placement.placement.get(
            f"/resource_providers/{rp_uuid}/traits", microversion=MV)
        assert ARRIA10 in resp.json()["traits"], resp.text

    # cyborg_lite: devices from Ironic, attach handles from its agent.
    cyborg = cyborg_fixtures.make_cyborg(
        tmp_path, inventory=False, **_embedded_agent(tmp_path, host))
    agent = agent_service.start_embedded(cyborg.conf)
    try:
        summary = ironic_inventory.sync(cyborg.db, ironic_server.connection(),
                                     host=host, placement=client,
                                     agent_api=rpcapi.AgentAPI(cyborg.conf))
    finally:
        agent.stop()
    assert summary["skipped"] == {} and summary["not_in_placement"] == {}
    assert len(summary["applied"]) == 1
    report = summary["handles"][host]
    assert report["source"] == "agent" and report["error"] is None
    assert report["unmatched"] == []
    assert report["kept"] == []
    assert {f"{fpga['pci_address']}/{r['id']}"
            for r in fpga["regions"]} <= set(report["filled"])

    # Nova: the profile's request groups pick a region of that FPGA ...
    profile = cyborg.create_profile([{"resources:FPGA": "1",
                                      f"trait:{ARRIA10}": "required"}])
    query = request_groups.querystring(profile["groups"],
                                       root_required=[marker])
    resp = placement.placement.get(f"/allocation_candidates?{query}",
                                   microversion=MV)
    assert resp.status_code == 200, resp.text
    picked = [c["mappings"]["device_profile_0"][0]
              for c in resp.json()["allocation_requests"]]
    assert set(picked) == region_rps

    # ... and the bind to the region Placement picked resolves to a BDF of
    # that region, as nova-compute reads it for libvirt.
    (arq,) = cyborg.create_arqs(profile["name"])
    instance = str(uuid.uuid4())
    resp = cyborg.bind([arq["uuid"]], picked[0], instance, host=host)
    assert resp.status_code == 202, resp.get_data(as_text=True)
    resp = cyborg.client.get(
        f"/v2/accelerator_requests?instance={instance}&bind_state=resolved",
        headers=cyborg_fixtures.NOVA)
    assert resp.status_code == 200, resp.get_data(as_text=True)
    (bound,) = resp.get_json()["arqs"]
    assert bound["state"] == "Bound"
    assert bound["device_rp_uuid"] == picked[0]
    region = next(r for r in fpga["regions"] if r["rp_uuid"] == picked[0])
    example = cyborg_fixtures.load_example_inventory()
    expected = {h["pci_address"] for d in example["devices"]
                if d["pci_address"] == fpga["pci_address"]
                for r in d["regions"] if r["id"] == region["id"]
                for h in r["attach_handles"]}
    assert _bdf(bound["attach_handle_info"]) in expected

    cyborg.app.extensions["cyborg_lite"].notifier.shutdown()
    cyborg.db.dispose()
