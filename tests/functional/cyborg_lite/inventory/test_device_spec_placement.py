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

"""The ``pci`` driver's device spec reaches Placement.

A QAT 401xx host whose ``[pci] device_spec`` names ``resource_class``
``CUSTOM_QAT_VF`` and ``traits`` ``qat-gen4``: the reporter wrote the
region with the class the BMC's device type gives (``CUSTOM_QAT``, one
unit); the agent's answer merged into the document and imported makes the
provider offer every VF as ``CUSTOM_QAT_VF`` with ``CUSTOM_QAT_GEN4``, the
reporter's next pass keeps that, and a spec that drops the trait takes it
off.
"""

import copy
import uuid

from accel_common import inventory
from accel_common.placement import client as placement_client
from accel_tools import request_groups
from cyborg_lite.agent import handles as agent_handles
from cyborg_lite.db import engine as db_engine
from cyborg_lite.db import models
from ironic_accel.placement import reporter
from tests.functional import documents
from tests.functional.cyborg_lite.inventory import commands
from tests.unit.cyborg_lite.agent.drivers import pci_host
from tests.unit.cyborg_lite.agent.drivers import test_pci

MV = request_groups.MICROVERSION
QAT_SPEC = {"vendor_id": "8086", "product_id": "4943",
            "resource_class": "CUSTOM_QAT_VF", "traits": "qat-gen4"}
PF = "0000:f3:00.0"


def _provider(conn, rp_uuid):
    inv = conn.placement.get(f"/resource_providers/{rp_uuid}/inventories",
                             microversion=MV).json()["inventories"]
    traits = conn.placement.get(f"/resource_providers/{rp_uuid}/traits",
                                microversion=MV).json()["traits"]
    return {rc: record["total"] for rc, record in inv.items()}, set(traits)


def _out_of_band(host, node):
    """The QAT PF as the reporter knows it: its class from its type."""
    device = documents.gpu(node, 0)
    device.update(id="qat0", type="QAT", vendor_id="0x8086",
                  product_id="0x4942", vendor="Intel", model="401xx",
                  pci_address=PF)
    region = device["regions"][0]
    region.update(resource_class="CUSTOM_QAT",
                  rp_uuid=inventory.region_rp_uuid(node, "qat0", "0"))
    del region["attach_handles"]
    return documents.document(host, node, [device])


def _discovered(tmp_path, spec):
    root = pci_host.render(pci_host.QAT_401XX,
                           tmp_path / f"host-{uuid.uuid4().hex[:6]}")
    return test_pci._driver(root, [spec]).discover()


def _stored(tmp_path):
    """The region's class, trait attributes and handle count in
    cyborg_lite's database."""
    db = db_engine.Database(f"sqlite:///{tmp_path}/cyborg_lite.sqlite")
    try:
        with db.transaction() as session:
            (deployable,) = session.query(models.Deployable).all()
            traits = {a.value for a in session.query(models.Attribute)
                      if a.key.startswith("trait")}
            handles = session.query(models.AttachHandle).count()
            return deployable.resource_class, traits, handles
    finally:
        db.dispose()


def test_spec_class_and_traits_reach_the_provider(
        tmp_path, config_file, placement_conn, compute_node):
    _, host = compute_node
    out_of_band = _out_of_band(host, str(uuid.uuid4()))
    rp_uuid = out_of_band["devices"][0]["regions"][0]["rp_uuid"]
    client = placement_client.Client(placement_conn)
    reporter.report(client, out_of_band)
    assert _provider(placement_conn, rp_uuid)[0] == {"CUSTOM_QAT": 1}
    assert commands.run_manage(config_file, "db", "sync") == 0

    document, _ = agent_handles.merge_discovered(
        copy.deepcopy(out_of_band), _discovered(tmp_path, QAT_SPEC))
    commands.import_document(tmp_path, config_file, document)

    inventories, traits = _provider(placement_conn, rp_uuid)
    assert inventories == {"CUSTOM_QAT_VF": 16}
    assert "CUSTOM_QAT_GEN4" in traits
    query = request_groups.querystring([{
        "resources:CUSTOM_QAT_VF": "1", "trait:CUSTOM_QAT_GEN4": "required"}])
    resp = placement_conn.placement.get(f"/allocation_candidates?{query}",
                                        microversion=MV)
    assert any(rp_uuid in c["allocations"]
               for c in resp.json()["allocation_requests"]), resp.text
    assert _stored(tmp_path) == ("CUSTOM_QAT_VF", {"CUSTOM_QAT_GEN4"}, 16)

    # NOTE(test): the reporter's next pass and the out-of-band document
    # (no handles, no spec: the agent did not answer) keep what the
    # agent's spec gave the region.
    reporter.report(client, out_of_band)
    assert _provider(placement_conn, rp_uuid) == (inventories, traits)
    commands.import_document(tmp_path, config_file, out_of_band)
    assert _provider(placement_conn, rp_uuid) == (inventories, traits)
    assert _stored(tmp_path) == ("CUSTOM_QAT_VF", {"CUSTOM_QAT_GEN4"}, 16)

    without_trait = dict(QAT_SPEC)
    del without_trait["traits"]
    document, _ = agent_handles.merge_discovered(
        copy.deepcopy(out_of_band), _discovered(tmp_path, without_trait))
    commands.import_document(tmp_path, config_file, document)
    inventories, traits = _provider(placement_conn, rp_uuid)
    assert inventories == {"CUSTOM_QAT_VF": 16}
    assert "CUSTOM_QAT_GEN4" not in traits
    assert _stored(tmp_path) == ("CUSTOM_QAT_VF", set(), 16)
