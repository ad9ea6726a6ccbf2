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

"""A whole-card image loaded out of band reaches Placement.

Real Ironic, real Placement: after cyborg_lite programmed a region in-band
(its function trait names that function), Ironic loads another image into
the card and the node's document reports it. The reporter leaves a
provider's function trait alone once it has one, so cyborg_lite's sync,
which takes the new function, must also move the trait; when Placement
refuses, the region's ``last_error`` says so and the reconciler's Placement
retry fixes it.
"""

import uuid

from oslo_config import cfg
import sqlalchemy as sa

from accel_common import exception as common_exception
from accel_common import inventory
from accel_common.placement import client as placement_client
from cyborg_lite import conf as cyborg_conf
from cyborg_lite.db import engine as db_engine
from cyborg_lite.db import models
from cyborg_lite.inventory import ironic as ironic_inventory
from cyborg_lite.programming import programmer as programmer_mod
from cyborg_lite.programming import providers as region_providers
from cyborg_lite.programming import reconciler
from cyborg_lite.programming import regions
from ironic_accel.placement import reporter
from tests.functional import documents
from tests.functional.e2e.test_end_to_end import FAKE_INTERFACES


class RefusingTraits(placement_client.Client):
    """A real client whose trait writes Placement answers 503 (a fault the
    real service cannot be asked to produce)."""

    def set_traits(self, rp_uuid, generation, traits):
        raise common_exception.PlacementError(
            "PUT", f"/resource_providers/{rp_uuid}/traits",
            _Response(503, "Service Unavailable"))


class _Response:
    def __init__(self, status_code, text):
        self.status_code = status_code
        self.text = text

    def json(self):
        return {"errors": [{"status": self.status_code,
                            "detail": self.text}]}


def _function_traits(client, rp_uuid):
    return {t for t in client.traits(rp_uuid)[1]
            if t.startswith(inventory.FUNCTION_TRAIT_PREFIX)}


def _region(db, rp_uuid):
    return db.read(lambda s: s.execute(
        sa.select(models.Deployable).where(
            models.Deployable.rp_uuid == rp_uuid)).scalar_one())


def _setup(ironic_server, baremetal, placement_conn, compute_node, tmp_path):
    _, host = compute_node
    node = baremetal.create_node(driver="fake-hardware",
                                 name=f"fn-{uuid.uuid4().hex[:8]}",
                                 **FAKE_INTERFACES)
    doc = documents.document(host, node.id, [
        documents.fpga(node.id, 0, function_id="nlb0")])
    baremetal.update_node(node, extra={"accelerators": doc})
    client = placement_client.Client(placement_conn)
    reporter.report(client, doc)
    db = db_engine.Database(f"sqlite:///{tmp_path / 'cyborg.db'}")
    db.sync()
    ironic_inventory.sync(db, ironic_server.connection(), host=host,
                       placement=client)
    rp_uuid = doc["devices"][0]["regions"][0]["rp_uuid"]
    # cyborg_lite programs nlb3 in-band: its database and its trait.
    db.run(lambda s: s.execute(
        sa.update(models.Deployable)
        .where(models.Deployable.rp_uuid == rp_uuid)
        .values(function_id="nlb3")))
    region_providers.RegionProviders(None, client=client).set_function_trait(
        rp_uuid, inventory.function_trait("INTEL", "nlb3"))
    return node, doc, client, db, rp_uuid


def _whole_card_image(baremetal, node, doc, client, function_id):
    doc["devices"][0]["regions"][0]["function_id"] = function_id
    baremetal.update_node(node, extra={"accelerators": doc})
    reporter.report(client, doc)


def test_out_of_band_function_moves_the_trait(
        ironic_server, baremetal, placement_conn, compute_node, tmp_path):
    node, doc, client, db, rp_uuid = _setup(
        ironic_server, baremetal, placement_conn, compute_node, tmp_path)
    host = doc["host"]

    # The BMC still reports nlb0: no news, the in-band nlb3 stays.
    result = ironic_inventory.sync(db, ironic_server.connection(), host=host,
                                placement=client)
    assert result["applied"][0]["functions_taken"] == []
    assert _region(db, rp_uuid).function_id == "nlb3"
    assert _function_traits(client, rp_uuid) == {
        "CUSTOM_FPGA_FUNCTION_ID_INTEL_NLB3"}

    # Ironic loads gzip into the whole card; the reporter keeps the trait.
    _whole_card_image(baremetal, node, doc, client, "gzip")
    assert _function_traits(client, rp_uuid) == {
        "CUSTOM_FPGA_FUNCTION_ID_INTEL_NLB3"}
    result = ironic_inventory.sync(db, ironic_server.connection(), host=host,
                                placement=client)
    assert result["applied"][0]["functions_taken"] == [{
        "rp_uuid": rp_uuid, "function_id": "gzip",
        "trait": "CUSTOM_FPGA_FUNCTION_ID_INTEL_GZIP"}]
    assert _region(db, rp_uuid).function_id == "gzip"
    assert _function_traits(client, rp_uuid) == {
        "CUSTOM_FPGA_FUNCTION_ID_INTEL_GZIP"}
    # identity traits the reporter owns are still there
    assert "CUSTOM_FPGA_INTEL" in client.traits(rp_uuid)[1]


def test_refused_trait_write_is_left_for_the_reconciler(
        ironic_server, baremetal, placement_conn, compute_node, tmp_path):
    node, doc, client, db, rp_uuid = _setup(
        ironic_server, baremetal, placement_conn, compute_node, tmp_path)
    _whole_card_image(baremetal, node, doc, client, "gzip")

    ironic_inventory.sync(db, ironic_server.connection(), host=doc["host"],
                       placement=RefusingTraits(placement_conn))

    region = _region(db, rp_uuid)
    assert region.function_id == "gzip"
    assert region.last_error.startswith(regions.PLACEMENT_FAILED)
    assert "503" in region.last_error
    assert _function_traits(client, rp_uuid) == {
        "CUSTOM_FPGA_FUNCTION_ID_INTEL_NLB3"}

    # Placement answers again: the reconciler's next pass moves the trait.
    conf = cfg.ConfigOpts()
    cyborg_conf.register_opts(conf)
    conf([], project="cyborg_lite")
    programmer = programmer_mod.Programmer(
        conf, db, providers=region_providers.RegionProviders(
            None, client=client))
    summary = reconciler.retry_placement(programmer)
    assert summary["placement_fixed"] == [region.uuid]
    assert _region(db, rp_uuid).last_error is None
    assert _function_traits(client, rp_uuid) == {
        "CUSTOM_FPGA_FUNCTION_ID_INTEL_GZIP"}
