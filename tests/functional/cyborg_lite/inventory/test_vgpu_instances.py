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

"""A GPU carved into vGPUs: one attach handle per instance.

``nvidia_mdev`` reports one MDEV handle per possible vGPU instance, all
alike; each is stored as its own handle with its own uuid (the name of
the mdev Nova creates for it), kept across imports, on every database.
The command test runs the agent's driver on a T4's sysfs, merges its
answer into the document the reporter wrote, imports it and checks that
real Placement offers every instance.
"""

import copy
import uuid

import pytest
import sqlalchemy as sa

from accel_common.placement import client as placement_client
from accel_tools import request_groups
from cyborg_lite import binding
from cyborg_lite.agent import handles as agent_handles
from cyborg_lite.agent.drivers import nvidia_mdev
from cyborg_lite.db import arqs as arq_db
from cyborg_lite.db import device_profiles as profile_db
from cyborg_lite.db import engine as db_engine
from cyborg_lite.db import models
from cyborg_lite.inventory import apply as inventory_apply
from ironic_accel.placement import reporter
from tests.functional import documents
from tests.functional.cyborg_lite.inventory import commands
from tests.unit.cyborg_lite.agent.conftest import make_conf
from tests.unit.cyborg_lite.agent.drivers import captured

MV = request_groups.MICROVERSION
T4 = "0000:3b:00.0"
#: a Tesla T4 whose T4-1B type (nvidia-222) runs 16 vGPUs at once.
T4_SYSFS = {"pci": {T4: {"vendor": "0x10de", "device": "0x1eb8",
                         "class": "0x030200"}},
            "mdev_bus": {T4: {"types": {
                "nvidia-222": {"available_instances": 16}}}}}


def _t4(node, instances=None):
    """The document's T4 (resource class VGPU) as the reporter writes it
    (no handles), or with ``instances`` nvidia-222 handles."""
    device = documents.gpu(node, 0, bus=0x3b)
    region = device["regions"][0]
    region["resource_class"] = "VGPU"
    del region["attach_handles"]
    if instances is not None:
        region["attach_handles"] = [
            {"type": "MDEV", "pci_address": T4, "mdev_type": "nvidia-222"}
            for _ in range(instances)]
    return device


def _document(host, node, instances):
    return documents.document(host, node, [_t4(node, instances)])


def _handles(db, rp_uuid):
    """uuid -> (in use, retired) of the region's handles."""
    with db.transaction() as session:
        rows = session.execute(
            sa.select(models.AttachHandle)
            .join(models.Deployable,
                  models.Deployable.id == models.AttachHandle.deployable_id)
            .where(models.Deployable.rp_uuid == rp_uuid)).scalars().all()
        return {h.uuid: (h.in_use, h.retired) for h in rows}


def _bind(db, host, rp_uuid, count):
    """Bind ``count`` one-vGPU ARQs on the region: their handle uuids."""
    profile = profile_db.create(db, name=f"dp-{uuid.uuid4().hex[:8]}",
                                groups=[{"resources:VGPU": "1"}])
    arqs = arq_db.create_many(db, profile.name, "p1", [0] * count)
    binding.bind(db, {arq.uuid: {"hostname": host, "device_rp_uuid": rp_uuid,
                                 "instance_uuid": str(uuid.uuid4())}
                      for arq in arqs}, notify=False)
    with db.transaction() as session:
        return session.execute(
            sa.select(models.AttachHandle.uuid).where(
                models.AttachHandle.arq_id.in_([a.id for a in arqs]))
        ).scalars().all()


@pytest.fixture
def db(db_url):
    database = db_engine.Database(db_url)
    database.sync()
    yield database
    database.dispose()


def test_every_vgpu_instance_is_a_handle_of_its_own(db):
    host, node = "vgpu.example.org", str(uuid.uuid4())
    document = _document(host, node, 16)
    rp_uuid = document["devices"][0]["regions"][0]["rp_uuid"]

    summary = inventory_apply.apply_document(db, document)

    assert summary["attach_handles"]["created"] == 16
    first = _handles(db, rp_uuid)
    assert len(first) == 16
    bound = _bind(db, host, rp_uuid, 16)
    assert len(set(bound)) == 16
    assert inventory_apply.apply_document(db, document)["changed"] is False
    assert _handles(db, rp_uuid).keys() == first.keys()


def test_instances_keep_their_uuids_as_the_count_changes(db):
    """Free instances go first when a GPU offers fewer; one in use is
    never dropped and keeps its uuid (Nova's mdev is named after it)."""
    host, node = "vgpu.example.org", str(uuid.uuid4())
    rp_uuid = _document(host, node, 0)["devices"][0]["regions"][0]["rp_uuid"]
    inventory_apply.apply_document(db, _document(host, node, 16))
    before = _handles(db, rp_uuid)
    bound = set(_bind(db, host, rp_uuid, 3))

    summary = inventory_apply.apply_document(db, _document(host, node, 4))
    after = _handles(db, rp_uuid)
    assert summary["attach_handles"]["deleted"] == 12
    assert bound < after.keys() <= before.keys()
    assert sorted(after.values()) == [(False, False)] + [(True, False)] * 3

    summary = inventory_apply.apply_document(db, _document(host, node, 2))
    after = _handles(db, rp_uuid)
    assert after.keys() == bound
    assert sorted(after.values()) == [(True, False)] * 2 + [(True, True)]

    summary = inventory_apply.apply_document(db, _document(host, node, 16))
    after = _handles(db, rp_uuid)
    assert summary["attach_handles"]["created"] == 13
    assert bound < after.keys()
    assert sorted(after.values()).count((False, False)) == 13
    assert (True, True) not in after.values()


def _total(conn, rp_uuid):
    inv = conn.placement.get(f"/resource_providers/{rp_uuid}/inventories",
                             microversion=MV).json()["inventories"]
    return inv["VGPU"]["total"]


def test_import_of_a_t4_offers_its_16_vgpus(tmp_path, config_file,
                                             placement_conn, compute_node):
    _, host = compute_node
    node = str(uuid.uuid4())
    out_of_band = _document(host, node, None)
    reporter.report(placement_client.Client(placement_conn), out_of_band)
    rp_uuid = out_of_band["devices"][0]["regions"][0]["rp_uuid"]
    assert _total(placement_conn, rp_uuid) == 1
    driver = nvidia_mdev.NvidiaMdevDriver(make_conf(
        sysfs_root=captured.build(tmp_path / "sysfs", T4_SYSFS)))
    document, unmatched = agent_handles.merge_discovered(
        copy.deepcopy(out_of_band), driver.discover())
    assert unmatched == []
    assert commands.run_manage(config_file, "db", "sync") == 0

    commands.import_document(tmp_path, config_file, document)

    assert _total(placement_conn, rp_uuid) == 16
    db = db_engine.Database(f"sqlite:///{tmp_path}/cyborg_lite.sqlite")
    try:
        first = _handles(db, rp_uuid)
        assert len(first) == 16
        bound = _bind(db, host, rp_uuid, 5)
        assert len(set(bound)) == 5
        commands.import_document(tmp_path, config_file, document)
        assert _handles(db, rp_uuid).keys() == first.keys()
        assert _total(placement_conn, rp_uuid) == 16
    finally:
        db.dispose()

