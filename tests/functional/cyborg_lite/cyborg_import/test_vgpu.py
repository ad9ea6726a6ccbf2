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

"""A vGPU real Cyborg's NVIDIA driver stored (one MDEV handle per possible
instance, two of them bound) is imported on sqlite, MariaDB and PostgreSQL
as four vGPU instances with Cyborg's uuids; a bound instance keeps its
handle uuid (the name of the mdev Nova created) and its binding, also when
the inventory's region adopts the card (real Placement), the region's
provider waiting for the name Cyborg's provider held."""

import pytest
import sqlalchemy as sa

from accel_common import inventory
from accel_common.placement import client as placement_client
from accel_common.placement import tree
from accel_tools.embedded import placement
from cyborg_lite.db import models
from cyborg_lite.inventory import apply as inventory_apply
from cyborg_lite.inventory import ironic as inventory_ironic
from tests.data.cyborg17 import vgpu
from tests.fixtures import cyborg17
from tests.fixtures.cyborg_server import make_inventory
from tests.functional.cyborg_lite.cyborg_import import cloud as cloud_mod
from tests.functional.cyborg_lite.cyborg_import.test_import import HOST
from tests.functional.cyborg_lite.cyborg_import.test_import import NOVA
from tests.functional.cyborg_lite.cyborg_import.test_import import PROJECT
from tests.functional.cyborg_lite.cyborg_import.test_import import resolved
from tests.functional.cyborg_lite.cyborg_import.test_import import run_import

#: what Nova's libvirt driver reads of attach_handle_info for an MDEV.
NOVA_READS = ("domain", "bus", "device", "function", "asked_type")


def cyborg_vgpu(tmp_path, host):
    """A Cyborg 17 database (sqlite) holding only the vGPU; returns its url
    and :func:`tests.data.cyborg17.vgpu.add`'s answer."""
    rows = {"alembic_version": cyborg17.recording()["alembic_version"]}
    added = vgpu.add(rows, host, project=PROJECT)
    return cyborg17.load(f"sqlite:///{tmp_path}/cyborg.sqlite", rows), added


def mdev_handles(db):
    """``[(uuid, mdev_index, in use, holder ARQ uuid, rp uuid)]``."""
    with db.transaction(read_only=True) as session:
        return [tuple(r) for r in session.execute(
            sa.select(models.AttachHandle.uuid,
                      models.AttachHandle.mdev_index,
                      models.AttachHandle.in_use, models.ARQ.uuid,
                      models.Deployable.rp_uuid)
            .join(models.Deployable,
                  models.Deployable.id == models.AttachHandle.deployable_id)
            .outerjoin(models.ARQ,
                       models.ARQ.id == models.AttachHandle.arq_id)
            .where(models.AttachHandle.type == "MDEV")
            .order_by(models.AttachHandle.mdev_index))]


def assert_bound_as_in_cyborg(lite, added, rp_uuid):
    """Each bound ARQ resolves to the handle uuid and the attach_handle_info
    (what Nova reads of it) real Cyborg gave it."""
    for instance, arq_uuid in added["instances"].items():
        arq = resolved(lite, instance)[arq_uuid]
        handle = added["arqs"][arq_uuid]
        assert arq["state"] == "Bound"
        assert arq["device_rp_uuid"] == rp_uuid
        assert arq["attach_handle_uuid"] == handle
        assert arq["attach_handle_type"] == "MDEV"
        info = added["info"][handle]
        assert {k: arq["attach_handle_info"][k] for k in NOVA_READS} == {
            k: info[k] for k in NOVA_READS}


def bind_new(lite, rp_uuid, host, count):
    """Nova's create and bind for ``count`` new instances; the handle
    uuids they got (None for a BindFailed) and the instances."""
    got, instances = [], []
    for _ in range(count):
        instance, found = cloud_mod.bind_as_nova(lite, vgpu.PROFILE, rp_uuid,
                                                 host)
        instances.append(instance)
        got.append(found["attach_handle_uuid"])
    return got, instances


@pytest.fixture
def lite(cyborg_on_each_db):
    """cyborg_lite on each database (tests.fixtures.cyborg)."""
    return cyborg_on_each_db


def test_vgpu_instances_are_imported_with_cyborg_uuids(lite, tmp_path,
                                                       capsys):
    source, added = cyborg_vgpu(tmp_path, HOST)
    assert run_import(lite.conf, source, apply=True) == 0
    out = capsys.readouterr().out
    assert "refused" not in out
    assert "4 MDEV attach handle(s) carry Cyborg's vgpu_mark" in out
    holders = {h: a for a, h in added["arqs"].items()}
    assert mdev_handles(lite.db) == [
        (handle, index, handle in holders, holders.get(handle),
         added["rp_uuid"])
        for index, handle in enumerate(added["handles"])]
    assert_bound_as_in_cyborg(lite, added, added["rp_uuid"])

    # New instances get the two free vGPUs, never a bound one; deleting a
    # bound instance frees its vGPU, same uuid.
    got, _ = bind_new(lite, added["rp_uuid"], HOST, 3)
    assert got[2] is None
    assert sorted(got[:2]) == sorted(set(added["handles"]) - set(holders))
    first = next(iter(added["instances"]))
    assert lite.client.delete(f"/v2/accelerator_requests?instance={first}",
                              headers=NOVA).status_code == 204
    assert bind_new(lite, added["rp_uuid"], HOST, 1)[0] == [
        added["arqs"][added["instances"][first]]]
    assert run_import(lite.conf, source, apply=True) == 0
    assert "Nothing to import" in capsys.readouterr().out


class Cloud(cloud_mod.Host):
    """A compute host where real Cyborg ran the vGPU: Cyborg's provider
    (4 VGPU, one allocated to each bound instance) in Placement, and the
    host's inventory document listing the same card with 4 instances."""

    def __init__(self, tmp_path, conn):
        super().__init__(conn)
        self.source, self.added = cyborg_vgpu(tmp_path, self.host)
        self.cyborg_rp = self.added["rp_uuid"]
        # Cyborg names the provider after the deployable, the name the
        # Ironic reporter gives the region of that card.
        self.region_name = f"{self.host}_{vgpu.ADDRESS}"
        self.cyborg_provider(self.cyborg_rp, self.region_name, {"VGPU": 4})
        for instance in self.added["instances"]:
            self.allocate(instance, self.cyborg_rp, {"VGPU": 1})
        document = make_inventory(host=self.host, device_id="gpu0",
                                  resource_class="VGPU")
        device = document["devices"][0]
        device.update(type="GPU", vendor_id="0x10de", product_id="0x1eb8",
                      vendor="NVIDIA", model="Tesla T4",
                      pci_address=vgpu.ADDRESS, program_mode="single")
        region = device["regions"][0]
        region["attach_handles"] = [
            {"type": "MDEV", "pci_address": vgpu.ADDRESS,
             "mdev_type": vgpu.MDEV_TYPE}] * 4
        self.document = inventory.validate(document)
        self.region_rp = region["rp_uuid"]

    def region_name_now(self):
        return self.call(
            "GET", f"/resource_providers/{self.region_rp}")["name"]

    def report_renames_the_region(self):
        """While Cyborg's provider had its name, the region carried the
        held one; the first report after adoption gives it its name, the
        next one writes nothing."""
        assert self.region_name_now() == tree.held_name(self.region_name)
        result = self.report()
        assert result.updated == [self.region_rp] and not result.held
        assert self.region_name_now() == self.region_name
        assert self.report().writes == 0

    def assert_adopted(self, lite):
        """Placement totals 4 VGPU on the region, 1 per bound instance;
        cyborg_lite holds 4 instances there, the bound ones with Cyborg's
        uuids and ARQs."""
        assert self.conn.placement.get(
            f"/resource_providers/{self.cyborg_rp}",
            microversion=placement.MICROVERSION).status_code == 404
        inventories = self.call(
            "GET", f"/resource_providers/{self.region_rp}/inventories")
        assert inventories["inventories"]["VGPU"]["total"] == 4
        usages = self.call("GET",
                           f"/resource_providers/{self.region_rp}/usages")
        assert usages["usages"] == {"VGPU": 2}
        for instance in self.added["instances"]:
            assert self.allocations(instance) == {
                self.region_rp: {"VGPU": 1}}
        handles = mdev_handles(lite.db)
        assert [h[1] for h in handles] == [0, 1, 2, 3]
        assert {h[4] for h in handles} == {self.region_rp}
        assert {(h[0], h[3]) for h in handles if h[2]} == {
            (handle, arq) for arq, handle in self.added["arqs"].items()}
        assert_bound_as_in_cyborg(lite, self.added, self.region_rp)


@pytest.fixture
def cloud(tmp_path, placement_server, placement_conn):
    return Cloud(tmp_path, placement_conn)


def test_adopted_vgpu_keeps_the_bound_instances_uuids(
        cloud, lite_on_placement, capsys):
    lite = lite_on_placement
    assert cloud.report().held == [cloud.region_rp]
    inventory_apply.apply_document(lite.db, cloud.document)
    own = {h[0] for h in mdev_handles(lite.db)}
    assert run_import(lite.conf, cloud.source, apply=True) == 0
    out = capsys.readouterr().out
    assert "adopted; its ARQs hold the inventory region's handles" in out
    cloud.assert_adopted(lite)
    free = {h[0] for h in mdev_handles(lite.db) if not h[2]}
    assert len(free & own) == 2

    # The next reports and sync keep every instance and its uuid.
    before = mdev_handles(lite.db)
    cloud.report_renames_the_region()
    cloud.assert_adopted(lite)
    inventory_apply.apply_document(lite.db, cloud.document)
    assert mdev_handles(lite.db) == before
    got, _ = bind_new(lite, cloud.region_rp, cloud.host, 3)
    assert got[2] is None and set(got[:2]) == free


def test_vgpu_imported_first_reserves_what_cyborg_uses_until_adopted(
        cloud, lite_on_placement, capsys):
    lite = lite_on_placement
    assert run_import(lite.conf, cloud.source, apply=True) == 0
    assert "kept usable under Cyborg's provider" in capsys.readouterr().out
    cloud.report()
    inventory_apply.apply_document(lite.db, cloud.document)
    # Two of the region's four instances are reserved, not all four.
    region = [h for h in mdev_handles(lite.db) if h[4] == cloud.region_rp]
    assert sorted((h[2], h[3]) for h in region) == [
        (False, None), (False, None), (True, None), (True, None)]
    got, instances = bind_new(lite, cloud.region_rp, cloud.host, 3)
    assert got[2] is None
    assert set(got[:2]) == {h[0] for h in region if not h[2]}
    for instance in instances:
        assert lite.client.delete(
            f"/v2/accelerator_requests?instance={instance}",
            headers=NOVA).status_code == 204

    lines = inventory_ironic.adopt_imported(
        lite.db, placement_client.Client(cloud.conn))
    assert any("in one reshaper call" in line for line in lines), lines
    cloud.assert_adopted(lite)
    cloud.report_renames_the_region()
    cloud.assert_adopted(lite)
