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

"""A device real Cyborg had that an Ironic inventory document lists too is
adopted by the document's region: Nova's allocations move from Cyborg's
provider to the reporter's (real Placement, one reshaper call), its Bound
ARQs to the region's handles at the same addresses, and nothing is lost or
counted twice, whichever of the import and the reporter comes first."""

import uuid

import pytest
import sqlalchemy as sa

from accel_common import inventory
from accel_common.placement import client as placement_client
from accel_tools.embedded import placement
from cyborg_lite.cyborg_import import adopt
from cyborg_lite.cyborg_import import importer
from cyborg_lite.cyborg_import import reader
from cyborg_lite.db import models
from cyborg_lite.inventory import apply as inventory_apply
from cyborg_lite.inventory import ironic as inventory_ironic
from tests.fixtures import cyborg17
from tests.fixtures.cyborg import make_cyborg
from tests.fixtures.cyborg_server import make_inventory
from tests.functional.cyborg_lite.cyborg_import import cloud as cloud_mod
from tests.functional.cyborg_lite.cyborg_import.test_import import NOVA
from tests.functional.cyborg_lite.cyborg_import.test_import import resolved
from tests.functional.cyborg_lite.cyborg_import.test_import import run_import

#: the addresses (bus 0c, device 00) of the fake driver's handles that
#: real Cyborg's Bound ARQs hold in the recording, by ARQ.
HELD = {"3b5900c5-3086-4c85-90e7-21f99ceff209": "0000:0c:00.2",
        "5ff7383e-e532-4464-821f-7eb40995bd77": "0000:0c:00.3"}


class Cloud(cloud_mod.Host):
    """A compute host where real Cyborg ran: its recorded database moved
    to a fresh host name, Cyborg's provider with Nova's allocations in
    Placement, and the host's inventory document (the same FPGA)."""

    def __init__(self, tmp_path, conn):
        super().__init__(conn)
        self.cyborg_rp = str(uuid.uuid3(uuid.NAMESPACE_DNS,
                                        f"{self.host}_FakeDevice"))
        rows = cyborg17.recording()
        self.instances = {}
        for device in rows["devices"]:
            device["hostname"] = self.host
        for arq in rows["extended_accelerator_requests"]:
            if arq["hostname"]:
                arq["hostname"] = self.host
            arq["instance_uuid"] = arq["instance_uuid"] and \
                self.instances.setdefault(arq["instance_uuid"],
                                          str(uuid.uuid4()))
            if arq["device_rp_uuid"] == cyborg17.FAKE_RP:
                arq["device_rp_uuid"] = self.cyborg_rp
        rows["deployables"][0]["rp_uuid"] = self.cyborg_rp
        self.rows = rows
        self.source = cyborg17.load(f"sqlite:///{tmp_path}/cyborg.sqlite",
                                    rows)
        self.bound = {}
        for arq in rows["extended_accelerator_requests"]:
            if arq["state"] == "Bound":
                self.bound.setdefault(arq["instance_uuid"], []).append(
                    arq["uuid"])
        self._cyborg_provider()
        document = make_inventory(host=self.host, first_bus=0x0d)
        region = document["devices"][0]["regions"][0]
        region["attach_handles"] = [
            {"type": "PCI", "pci_address": f"0000:0c:00.{f}"}
            for f in range(8)]
        self.document = inventory.validate(document)
        self.region_rp = region["rp_uuid"]

    def _cyborg_provider(self):
        """What Cyborg's conductor and Nova wrote: the provider with 16
        FPGA and the OWNER_CYBORG trait, one FPGA per Bound ARQ."""
        self.cyborg_provider(self.cyborg_rp, f"{self.host}_FakeDevice",
                             {"FPGA": 16})
        self.call("PUT", f"/resource_providers/{self.cyborg_rp}/traits",
                  {"resource_provider_generation": 1,
                   "traits": ["OWNER_CYBORG"]})
        for instance, arqs in self.bound.items():
            self.allocate(instance, self.cyborg_rp, {"FPGA": len(arqs)})

    def exists(self, rp_uuid):
        return self.conn.placement.get(
            f"/resource_providers/{rp_uuid}",
            microversion=placement.MICROVERSION).status_code == 200

    def expected_allocations(self, rp_uuid):
        return {i: {rp_uuid: {"FPGA": len(a)}} for i, a in self.bound.items()}


@pytest.fixture
def cloud(tmp_path, placement_server, placement_conn):
    return Cloud(tmp_path, placement_conn)


def twin_handles(db, rp_uuid):
    """``{pci address: (in use, holder ARQ uuid)}`` of a region."""
    with db.transaction(read_only=True) as session:
        rows = session.execute(
            sa.select(models.AttachHandle.pci_address,
                      models.AttachHandle.in_use, models.ARQ.uuid)
            .join(models.Deployable,
                  models.Deployable.id == models.AttachHandle.deployable_id)
            .outerjoin(models.ARQ,
                       models.ARQ.id == models.AttachHandle.arq_id)
            .where(models.Deployable.rp_uuid == rp_uuid)).all()
    return {address: (in_use, arq) for address, in_use, arq in rows}


def assert_adopted(cloud, lite):
    """One owner, no allocation lost or doubled, ARQs on the twins."""
    assert not cloud.exists(cloud.cyborg_rp)
    for instance in cloud.bound:
        assert cloud.allocations(instance) == \
            cloud.expected_allocations(cloud.region_rp)[instance]
    handles = twin_handles(lite.db, cloud.region_rp)
    for instance, arqs in cloud.bound.items():
        for arq_uuid, arq in resolved(lite, instance).items():
            assert arq["state"] == "Bound"
            assert arq["device_rp_uuid"] == cloud.region_rp
            address = HELD.get(arq_uuid)
            if address:
                assert handles[address] == (True, arq_uuid)
    held = {a for a, (in_use, _) in handles.items() if in_use}
    assert len(held) == sum(len(a) for a in cloud.bound.values())
    with lite.db.transaction(read_only=True) as session:
        assert session.scalar(sa.select(sa.func.count()).select_from(
            models.Device)) == 1


def bind_new(lite, rp_uuid, host, count):
    """Nova's create and bind for ``count`` new instances; returns the
    handle addresses they got (None for a BindFailed) and the instances."""
    got, instances = [], []
    for _ in range(count):
        instance, found = cloud_mod.bind_as_nova(lite, "import-one", rp_uuid,
                                                 host)
        instances.append(instance)
        info = found["attach_handle_info"]
        got.append(f"{info['domain']}:{info['bus']}:{info['device']}."
                   f"{info['function']}" if info else None)
    return got, instances


def test_import_adopts_a_device_the_inventory_already_has(
        cloud, lite_on_placement, capsys):
    lite = lite_on_placement
    # The reporter leaves Cyborg's provider alone: it is not its own.
    result = cloud.report()
    assert result.created == [cloud.region_rp] and not result.deleted
    assert cloud.exists(cloud.cyborg_rp)
    inventory_apply.apply_document(lite.db, cloud.document)

    assert run_import(lite.conf, cloud.source) == 0
    out = capsys.readouterr().out
    assert "then adopted by the inventory's region" in out
    assert "refused" not in out

    assert run_import(lite.conf, cloud.source, apply=True) == 0
    out = capsys.readouterr().out
    assert "in one reshaper call" in out
    assert f"deleted Cyborg's provider {cloud.cyborg_rp}" in out
    assert "adopted; its ARQs hold the inventory region's handles" in out
    assert_adopted(cloud, lite)
    # attach_handle_info is what real Cyborg answered: same functions.
    for arq_uuid, arq in resolved(
            lite, next(i for i, a in cloud.bound.items()
                       if len(a) == 2)).items():
        assert arq["attach_handle_info"]["function"] == HELD[arq_uuid][-1]

    # The first report and sync afterwards write nothing; a rerun does
    # nothing.
    assert cloud.report().writes == 0
    assert not inventory_apply.apply_document(lite.db,
                                              cloud.document)["changed"]
    assert_adopted(cloud, lite)
    assert run_import(lite.conf, cloud.source, apply=True) == 0
    out = capsys.readouterr().out
    assert "Nothing to import" in out and "adopt:" not in out

    # New instances never get a function an adopted instance holds; delete
    # by instance frees the adopted handles.
    free = 8 - 3
    got, _ = bind_new(lite, cloud.region_rp, cloud.host, free + 1)
    assert got[-1] is None
    assert not set(got[:-1]) & {"0000:0c:00.1", *HELD.values()}
    first = next(iter(cloud.bound))
    assert lite.client.delete(f"/v2/accelerator_requests?instance={first}",
                              headers=NOVA).status_code == 204
    assert bind_new(lite, cloud.region_rp, cloud.host, 1)[0] == \
        ["0000:0c:00.1"]


def test_reporter_enabled_after_the_import_is_adopted_by_the_sync(
        cloud, lite_on_placement, capsys):
    lite = lite_on_placement
    assert run_import(lite.conf, cloud.source, apply=True) == 0
    assert "kept usable under Cyborg's provider" in capsys.readouterr().out
    client = placement_client.Client(cloud.conn)
    # The Ironic reporter comes later: its region appears beside Cyborg's.
    cloud.report()
    inventory_apply.apply_document(lite.db, cloud.document)
    # Until adopted, the twin handles Cyborg's ARQs hold are reserved.
    handles = twin_handles(lite.db, cloud.region_rp)
    for address in ("0000:0c:00.1", *HELD.values()):
        assert handles[address] == (True, None)
    got, instances = bind_new(lite, cloud.region_rp, cloud.host, 6)
    assert got[-1] is None
    assert not set(got) & {"0000:0c:00.1", *HELD.values()}
    for instance in instances:
        assert lite.client.delete(
            f"/v2/accelerator_requests?instance={instance}",
            headers=NOVA).status_code == 204

    # What the inventory sync runs after each pass.
    lines = inventory_ironic.adopt_imported(lite.db, client)
    assert any("in one reshaper call" in line for line in lines)
    assert_adopted(cloud, lite)
    assert inventory_ironic.adopt_imported(lite.db, client) == []


def test_adoption_cut_off_after_placement_finishes_on_rerun(
        cloud, lite_on_placement):
    lite = lite_on_placement
    cloud.report()
    inventory_apply.apply_document(lite.db, cloud.document)
    importer.run(lite.db, reader.read(cloud.source), apply=True)
    client = placement_client.Client(cloud.conn)
    # Placement moved, then the process died before the database followed.
    by_host, _, _ = lite.db.read(adopt._survey, cloud.host)
    adopt._move_in_placement(client, cloud.host, by_host[cloud.host][1])
    assert not cloud.exists(cloud.cyborg_rp)
    lines = adopt.adopt(lite.db, client)
    assert any("adopted" in line for line in lines)
    assert not any("reshaper" in line for line in lines)
    assert_adopted(cloud, lite)


def test_region_too_small_moves_nothing(cloud, lite_on_placement, capsys):
    lite = lite_on_placement
    cloud.report()
    inventory_apply.apply_document(lite.db, cloud.document)
    # Another consumer takes all but two of the region's eight.
    cloud.allocate(str(uuid.uuid4()), cloud.region_rp, {"FPGA": 6})
    assert run_import(lite.conf, cloud.source, apply=True) == 0
    out = capsys.readouterr().out
    assert "has 2 FPGA free but Cyborg's instances hold 3; nothing moved" \
        in out
    assert cloud.exists(cloud.cyborg_rp)
    for instance in cloud.bound:
        assert cloud.allocations(instance) == \
            cloud.expected_allocations(cloud.cyborg_rp)[instance]
    for instance in cloud.bound:
        for arq in resolved(lite, instance).values():
            assert arq["device_rp_uuid"] == cloud.cyborg_rp
    # Nova deletes one instance: what every inventory sync pass runs after
    # it, also a pass that applied no document, frees the twin handle.
    first = next(i for i, a in cloud.bound.items() if len(a) == 1)
    assert lite.client.delete(f"/v2/accelerator_requests?instance={first}",
                              headers=NOVA).status_code == 204
    lines = inventory_ironic.adopt_imported(
        lite.db, placement_client.Client(cloud.conn))
    assert any("nothing moved" in line for line in lines)
    handles = twin_handles(lite.db, cloud.region_rp)
    assert {a for a, (in_use, _) in handles.items() if in_use} == set(
        HELD.values())


def test_without_placement_the_twin_handles_stay_reserved(
        tmp_path, cloud, capsys):
    lite = make_cyborg(tmp_path, inventory=False)
    try:
        inventory_apply.apply_document(lite.db, cloud.document)
        assert run_import(lite.conf, cloud.source, apply=True) == 0
        out = capsys.readouterr().out
        assert "1 imported device(s) are also in an inventory document: " \
               "configure [placement]" in out
        handles = twin_handles(lite.db, cloud.region_rp)
        assert {a for a, (in_use, _) in handles.items() if in_use} == {
            "0000:0c:00.1", *HELD.values()}
        # Nova deletes one instance: its twin is free after the next sync.
        first = next(i for i, a in cloud.bound.items() if len(a) == 1)
        assert lite.client.delete(
            f"/v2/accelerator_requests?instance={first}",
            headers=NOVA).status_code == 204
        inventory_apply.apply_document(lite.db, cloud.document)
        handles = twin_handles(lite.db, cloud.region_rp)
        assert {a for a, (in_use, _) in handles.items() if in_use} == set(
            HELD.values())
    finally:
        lite.db.dispose()
