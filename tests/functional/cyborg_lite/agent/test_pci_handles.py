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

"""A host whose GPU, NIC and QAT card Ironic reported without handles: the
real agent (``pci`` driver, over the in-process transport) finds them on
the host's sysfs, rendered from recordings of real hardware, and the
inventory document gets every attach handle, stored with the physnet Nova
reads for a NIC VF; no inventory file by hand."""

import json
import uuid

import pytest
import sqlalchemy as sa

from accel_common import inventory
from cyborg_lite import binding
from cyborg_lite.agent import rpcapi
from cyborg_lite.agent import service
from cyborg_lite.db import models
from cyborg_lite.inventory import apply as inventory_apply
from cyborg_lite.inventory import handle_discovery
from tests.unit.cyborg_lite.agent.conftest import make_conf
from tests.unit.cyborg_lite.agent.drivers import pci_host

NODE = "6d2f7d0e-3b1a-4c55-9a0e-2f7c1b9d8e41"
GPU, NIC_PORT0, NIC_PORT1 = "0000:41:00.0", "0000:5f:00.0", "0000:5f:00.1"
QAT0, QAT1 = "0000:f3:00.0", "0000:f7:00.0"

SPECS = [
    {"vendor_id": "10de", "product_id": "2331"},
    {"vendor_id": "15b3", "product_id": "1018"},
    {"vendor_id": "8086", "product_id": "4943"},
]


def _host(root):
    """The H100, the ConnectX-5 and the 401xx QAT recordings in one host
    (their PCI addresses do not overlap)."""
    functions = {}
    for recording in (pci_host.H100, pci_host.CONNECTX5,
                      pci_host.QAT_401XX):
        functions.update(pci_host.functions_of(recording))
    return pci_host.write_tree(root, functions)


def _device(device_id, device_type, rc, vendor_id, product_id, address):
    """A device as the Ironic side reports it: no attach handles."""
    return {"id": device_id, "type": device_type, "vendor_id": vendor_id,
            "product_id": product_id, "pci_address": address,
            "redfish_uri": f"/redfish/v1/Chassis/1/PCIeDevices/{device_id}",
            "program_mode": "single",
            "regions": [{"id": "0", "resource_class": rc,
                         "rp_uuid": inventory.region_rp_uuid(
                             NODE, device_id, "0")}]}


def _document(host):
    devices = [
        _device("gpu0", "GPU", "PGPU", "0x10de", "0x2331", GPU),
        _device("nic0", "NIC", "CUSTOM_NIC", "0x15b3", "0x1017", NIC_PORT0),
        _device("nic1", "NIC", "CUSTOM_NIC", "0x15b3", "0x1017", NIC_PORT1),
        _device("qat0", "QAT", "CUSTOM_QAT", "0x8086", "0x4942", QAT0),
        # NOTE(tests): most BMCs give no PCI address (schema 1.1); the agent
        # completes this one as the only QAT card left.
        _device("qat1", "QAT", "CUSTOM_QAT", None, None, None),
    ]
    return inventory.validate({
        "schema_version": inventory.version_for(devices), "host": host,
        "node_uuid": NODE, "refreshed_at": None, "devices": devices})


@pytest.fixture
def agent(tmp_path):
    conf = make_conf(enabled_drivers=["pci"],
                     sysfs_root=_host(tmp_path / "host"),
                     host=f"pci-{uuid.uuid4().hex[:12]}")
    conf.set_override("transport_url", "fake://")
    conf.set_override("device_spec", [json.dumps(s) for s in SPECS],
                      group="pci")
    conf.set_override("physical_device_mappings",
                      ["physnet1:ens41f0np0", "physnet2:ens41f1np1"],
                      group="pci")
    running = service.start_embedded(conf)
    yield conf, rpcapi.AgentAPI(conf)
    running.stop()


def _handles(document):
    return {d["id"]: [(h["pci_address"], h.get("physical_network"))
                      for h in d["regions"][0].get("attach_handles", [])]
            for d in document["devices"]}


def test_agent_fills_gpu_nic_vf_and_qat_vf_handles(agent):
    conf, api = agent
    document = _document(conf.agent.host)

    filled, report = handle_discovery.fill_handles(document, api)

    assert report["error"] is None and report["source"] == "agent"
    assert report["kept"] == [] and report["unmatched"] == []
    assert report["completed"] == {"qat1": QAT1}
    handles = _handles(filled)
    assert handles["gpu0"] == [(GPU, None)]
    assert handles["nic0"] == [(f"0000:5f:00.{f}", "physnet1")
                               for f in (2, 3, 4)]
    assert handles["nic1"] == [(f"0000:5f:00.{f}", "physnet2")
                               for f in (5, 6, 7)]
    assert len(handles["qat0"]) == 16
    assert handles["qat0"][0] == ("0000:f3:00.1", None)
    assert handles["qat1"] == [(f"0000:f7:00.{f}", None) for f in (1, 2, 3)]
    assert inventory.validate(filled) == filled


def test_stored_vf_handles_give_nova_their_physnet(agent, db):
    conf, api = agent
    filled, _ = handle_discovery.fill_handles(_document(conf.agent.host),
                                              api)

    inventory_apply.apply_document(db, filled)

    def infos(session):
        rows = session.scalars(sa.select(models.AttachHandle).order_by(
            models.AttachHandle.pci_address)).all()
        return {row.pci_address: binding.attach_handle_info(row)
                for row in rows}
    stored = db.read(infos)
    assert len(stored) == 1 + 6 + 16 + 3
    # What Nova's libvirt driver reads to bind a port to a VF.
    assert stored["0000:5f:00.6"] == {
        "domain": "0000", "bus": "5f", "device": "00", "function": "6",
        "physical_network": "physnet2"}
    assert "physical_network" not in stored[GPU]


def test_agent_with_a_bad_spec_still_answers(agent):
    conf, api = agent
    conf.set_override("device_spec", ["{not json"] + [
        json.dumps(s) for s in SPECS], group="pci")

    devices = api.discover(conf.agent.host)["devices"]

    assert [d["pci_address"] for d in devices] == [
        GPU, NIC_PORT0, NIC_PORT1, QAT0, QAT1]
    assert {d["driver"] for d in devices} == {"pci"}
