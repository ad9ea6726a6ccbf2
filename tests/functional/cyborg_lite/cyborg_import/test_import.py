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

"""``cyborg-lite-manage cyborg import`` of a database real Cyborg 17 wrote
(the recording in ``tests/data/cyborg17``), into cyborg_lite on sqlite,
MariaDB and PostgreSQL that already holds the example inventory; then the
calls Nova makes after the switch, against cyborg_lite."""

import argparse
import hashlib
import json
import os
import uuid

import pytest
import sqlalchemy as sa

from accel_tools.embedded import placement
from cyborg_lite.cmd.manage import cyborg as cyborg_cmd
from cyborg_lite.cyborg_import import reader
from cyborg_lite.db import models
from cyborg_lite.inventory import apply as inventory_apply
from tests.data.cyborg17 import drive_real_cyborg
from tests.fixtures import cyborg17
from tests.fixtures import cyborg_server
from tests.fixtures import databases
from tests.fixtures.cyborg import headers
from tests.fixtures.cyborg import make_cyborg
from tests.fixtures.cyborg_server import make_inventory

PROJECT = "b0b3f7a2c1d84e2f9a6b5c4d3e2f1a0b"
NOVA = headers(project=PROJECT, roles="member,reader", service=True)
ADMIN = headers(project=PROJECT, roles="admin")
HOST = "realcyborg-local"

#: what real Cyborg answered for the recording (drive_real_cyborg.py).
ONE_ARQ_INSTANCE = "e3e48d31-02c3-470d-a887-1533c0dbe1e9"
TWO_ARQ_INSTANCE = "e82db2f7-c31c-4c73-aded-a9630ce6b843"
REAL_ANSWER = {
    "3b5900c5-3086-4c85-90e7-21f99ceff209":
        ("d9979d74-3b44-44be-9d03-860567faa0e0", "2"),
    "5ff7383e-e532-4464-821f-7eb40995bd77":
        ("0b031139-c19d-449f-ba92-26b1886ab51f", "3"),
}
STUCK_ARQ = "8a5534d2-9fa4-4d8a-93e9-94d7880182d4"


def run_import(conf, source, apply=False, free=False):
    args = argparse.Namespace(source=source, apply=apply,
                              free_orphan_handles=free)
    return cyborg_cmd.cyborg_import(conf, args)


@pytest.fixture
def source(tmp_path):
    """The recorded Cyborg 17 database, as a sqlite file."""
    return cyborg17.load(f"sqlite:///{tmp_path}/cyborg.sqlite")


@pytest.fixture
def lite(cyborg_on_each_db):
    """cyborg_lite on each database (tests.fixtures.cyborg)."""
    return cyborg_on_each_db


def counts(db):
    with db.transaction(read_only=True) as session:
        return {m.__tablename__: session.scalar(
            sa.select(sa.func.count()).select_from(m))
            for m in (models.DeviceProfile, models.Device,
                      models.Deployable, models.Attribute,
                      models.AttachHandle, models.ARQ)}


def handles_in_use(db):
    with db.transaction(read_only=True) as session:
        return set(session.scalars(sa.select(models.AttachHandle.uuid).where(
            models.AttachHandle.in_use.is_(True))))


def resolved(lite, instance):
    response = lite.client.get(
        f"/v2/accelerator_requests?instance={instance}&bind_state=resolved",
        headers=NOVA)
    assert response.status_code == 200, response.get_data(as_text=True)
    return {a["uuid"]: a for a in response.get_json()["arqs"]}


def bind(lite, arqs, instance, rp=cyborg17.FAKE_RP):
    body = {a: [{"op": "add", "path": "/hostname", "value": HOST},
                {"op": "add", "path": "/device_rp_uuid", "value": rp},
                {"op": "add", "path": "/instance_uuid", "value": instance}]
            for a in arqs}
    return lite.client.patch("/v2/accelerator_requests", headers=NOVA,
                             json=body)


def test_dry_run_changes_nothing_and_says_what_it_would_do(lite, source,
                                                           capsys):
    before = counts(lite.db)
    assert run_import(lite.conf, source) == 0
    out = capsys.readouterr().out
    assert "accelerator_requests: 5 to import" in out
    assert f"ARQ {STUCK_ARQ}" in out and "imported as BindFailed" in out
    assert "Dry run: nothing was changed" in out
    assert counts(lite.db) == before


def free_handles(db, rp_uuid=cyborg17.FAKE_RP):
    with db.transaction(read_only=True) as session:
        return set(session.scalars(
            sa.select(models.AttachHandle.uuid)
            .join(models.Deployable,
                  models.Deployable.id == models.AttachHandle.deployable_id)
            .where(models.Deployable.rp_uuid == rp_uuid,
                   models.AttachHandle.in_use.is_(False))))


def nova_flow(lite, driven, profile, capsys, source):
    """What Nova does after the switch, against what real Cyborg answered
    before it (``driven``, see drive_real_cyborg.py)."""
    bound = {i: arqs for i, arqs in driven["instances"].items()}
    # Resolved ARQs are found with the handles real Cyborg gave them.
    for instance, arqs in bound.items():
        found = resolved(lite, instance)
        assert set(found) == set(arqs)
        for arq_uuid, arq in found.items():
            assert arq["state"] == "Bound"
            assert arq["device_rp_uuid"] == cyborg17.FAKE_RP
            assert arq["attach_handle_uuid"] == driven["arqs"][arq_uuid][2]
    stuck = driven["stuck"]["arqs"][0]
    stuck_instance = driven["arqs"][stuck][1]
    assert resolved(lite, stuck_instance)[stuck]["state"] == "BindFailed"

    # Delete by instance frees the handles, and only those.
    first, *others = bound
    held = handles_in_use(lite.db)
    response = lite.client.delete(
        f"/v2/accelerator_requests?instance={first}", headers=NOVA)
    assert response.status_code == 204
    freed = {driven["arqs"][a][2] for a in bound[first]}
    assert handles_in_use(lite.db) == held - freed
    assert lite.client.delete(
        f"/v2/accelerator_requests?instance={stuck_instance}",
        headers=NOVA).status_code == 204

    # New binds take the free handles, never one in use.
    free = free_handles(lite.db)
    in_use = handles_in_use(lite.db)
    taken = set()
    for index in range(len(free) + 1):
        response = lite.client.post("/v2/accelerator_requests",
                                    headers=NOVA,
                                    json={"device_profile_name": profile})
        assert response.status_code == 201
        arq = response.get_json()["arqs"][0]["uuid"]
        instance = f"00000000-0000-4000-8000-{index:012d}"
        bind(lite, [arq], instance)
        found = resolved(lite, instance)[arq]
        if index == len(free):
            assert found["state"] == "BindFailed"
        else:
            assert found["state"] == "Bound"
            taken.add(found["attach_handle_uuid"])
    assert taken == free and not taken & in_use
    for instance in others:
        assert resolved(lite, instance)

    # Running the import again imports nothing, whatever happened since.
    capsys.readouterr()
    assert run_import(lite.conf, source, apply=True) == 0
    out = capsys.readouterr().out
    assert "Nothing to import: everything was imported before." in out


def test_nova_flow_after_import(lite, source, capsys):
    before = counts(lite.db)
    assert run_import(lite.conf, source, apply=True) == 0
    after = counts(lite.db)
    assert after["arqs"] == before["arqs"] + 5
    assert after["attach_handles"] == before["attach_handles"] + 16
    # attach_handle_info as real Cyborg answered it, with two-digit device
    found = resolved(lite, TWO_ARQ_INSTANCE)
    for arq_uuid, (handle, function) in REAL_ANSWER.items():
        assert found[arq_uuid]["attach_handle_type"] == "TEST_PCI"
        assert found[arq_uuid]["attach_handle_info"] == {
            "domain": "0000", "bus": "0c", "device": "00",
            "function": function}
    # The admin views (openstack accelerator device/deployable list).
    recorded = cyborg17.recording()
    for kind, table in (("devices", "devices"),
                        ("deployables", "deployables")):
        response = lite.client.get(f"/v2/{kind}", headers=ADMIN)
        assert response.status_code == 200, response.get_data(as_text=True)
        listed = {item["uuid"] for item in response.get_json()[kind]}
        assert {r["uuid"] for r in recorded[table]} <= listed
    nova_flow(lite, cyborg17.driven(), "import-one", capsys, source)


def test_nic_handles_keep_their_physical_network(cyborg, tmp_path):
    rows = cyborg17.recording()
    rows["devices"][0]["type"] = "NIC"
    for handle in rows["attach_handles"]:
        info = json.loads(handle["attach_info"])
        handle["attach_info"] = json.dumps(
            dict(info, physical_network="physnet1"), sort_keys=True)
    source = cyborg17.load(f"sqlite:///{tmp_path}/nic.sqlite", rows)
    assert run_import(cyborg.conf, source, apply=True) == 0
    found = resolved(cyborg, TWO_ARQ_INSTANCE)
    for arq_uuid, (_, function) in REAL_ANSWER.items():
        # NOTE(test): what Nova 34 copies into the port's binding profile.
        assert found[arq_uuid]["attach_handle_info"] == {
            "domain": "0000", "bus": "0c", "device": "00",
            "function": function, "physical_network": "physnet1"}


def test_second_import_takes_only_what_is_new(lite, tmp_path, capsys):
    rows = cyborg17.recording()
    rows["extended_accelerator_requests"].pop()
    earlier = cyborg17.load(f"sqlite:///{tmp_path}/earlier.sqlite", rows)
    assert run_import(lite.conf, earlier, apply=True) == 0
    later = cyborg17.load(f"sqlite:///{tmp_path}/later.sqlite")
    capsys.readouterr()
    assert run_import(lite.conf, later, apply=True) == 0
    out = capsys.readouterr().out
    assert "accelerator_requests: 1 to import, 4 imported before" in out
    assert "devices: 0 to import, 1 imported before" in out


def test_inventory_sync_keeps_imported_devices(lite, source):
    assert run_import(lite.conf, source, apply=True) == 0
    before = counts(lite.db)
    summary = inventory_apply.apply_document(
        lite.db, make_inventory(host=HOST, first_bus=0x20))
    assert summary["devices"]["deleted"] == 0
    assert summary["devices"]["retired"] == 0
    after = counts(lite.db)
    assert after["devices"] == before["devices"] + summary["devices"][
        "created"]
    assert resolved(lite, ONE_ARQ_INSTANCE)


def test_conflicting_profile_refuses_and_changes_nothing(lite, source,
                                                         capsys):
    response = lite.client.post(
        "/v2/device_profiles", headers=ADMIN,
        json=[{"name": "import-one", "groups": [{"resources:GPU": "1"}]}])
    assert response.status_code == 201
    before = counts(lite.db)
    assert run_import(lite.conf, source, apply=True) == 1
    out = capsys.readouterr().out
    assert "refused: device profile import-one" in out
    assert "The import cannot be done" in out
    assert counts(lite.db) == before


def test_source_is_only_read(lite, source, capsys):
    path = source.split("///", 1)[1]
    with open(path, "rb") as handle:
        before = hashlib.sha256(handle.read()).hexdigest()
    assert run_import(lite.conf, source, apply=True) == 0
    with open(path, "rb") as handle:
        assert hashlib.sha256(handle.read()).hexdigest() == before
    # the connection the import reads through refuses writes
    engine = sa.create_engine(reader._read_only_url(source))
    with engine.connect() as conn:
        with pytest.raises(sa.exc.OperationalError, match="readonly"):
            conn.execute(sa.text("DELETE FROM device_profiles"))
    engine.dispose()


def test_release_before_17_is_imported(lite, tmp_path, capsys):
    rows = cyborg17.recording()
    rows["alembic_version"] = [{"version_num": "6c77bd6afea5"}]
    url = cyborg17.load(f"sqlite:///{tmp_path}/2025.sqlite", rows)
    assert run_import(lite.conf, url, apply=True) == 0
    out = capsys.readouterr().out
    assert "2024.1-2026.1" in out and "device_state" not in out
    assert resolved(lite, TWO_ARQ_INSTANCE).keys() == REAL_ANSWER.keys()


def test_unknown_schema_is_refused_naming_the_revision(lite, tmp_path,
                                                       capsys):
    rows = cyborg17.recording()
    rows["alembic_version"] = [{"version_num": "ede4e3f1a232"}]
    url = cyborg17.load(f"sqlite:///{tmp_path}/old.sqlite", rows)
    before = counts(lite.db)
    assert run_import(lite.conf, url, apply=True) == 2
    err = capsys.readouterr().err
    assert "ede4e3f1a232" in err and "b47c8f2d1e3a" in err
    assert counts(lite.db) == before


def test_console_script_dry_run_then_apply(tmp_path, source):
    server = cyborg_server.CyborgServer(tmp_path)
    server.write_config()
    server.manage("db", "sync")
    dry = server.manage("cyborg", "import", "--from", source)
    assert "Dry run: nothing was changed" in dry.stdout
    done = server.manage("cyborg", "import", "--from", source, "--apply")
    assert "Imported, in one transaction." in done.stdout
    again = server.manage("cyborg", "import", "--from", source, "--apply")
    assert "Nothing to import" in again.stdout
    missing = server.manage("cyborg", "import", "--from",
                            f"sqlite:///{tmp_path}/absent.sqlite",
                            check=False)
    assert missing.returncode == 2
    assert "is not a Cyborg database" in missing.stderr


def test_cyborg_lite_database_is_not_a_cyborg_database(lite, capsys):
    assert run_import(lite.conf, lite.conf.database.connection) == 2
    assert "is not a Cyborg database" in capsys.readouterr().err


@pytest.mark.parametrize("backend", [
    pytest.param("mariadb", marks=pytest.mark.mariadb),
    pytest.param("postgresql", marks=pytest.mark.postgresql)])
def test_source_on_a_server_is_read(tmp_path, backend, capsys):
    lite = make_cyborg(tmp_path, inventory=False)
    with databases.database(backend, tmp_path) as url:
        cyborg17.load(url)
        assert run_import(lite.conf, url, apply=True) == 0
        assert resolved(lite, TWO_ARQ_INSTANCE).keys() == REAL_ANSWER.keys()
        # nothing was written to the source
        engine = sa.create_engine(url)
        with engine.connect() as conn:
            assert conn.scalar(sa.text(
                "SELECT count(*) FROM extended_accelerator_requests")) == 5
        engine.dispose()
    lite.db.dispose()


@pytest.fixture(scope="module")
def live_cyborg():
    """A running real Cyborg 17 (``ACCEL_REAL_CYBORG=1`` and
    ``ACCEL_REAL_CYBORG_DIR``: a started copy of shared/realcyborg, see
    tests/data/cyborg17/SOURCES.rst), driven once as Nova would;
    ``ACCEL_REAL_CYBORG_DB``: its database when not the copy's sqlite."""
    directory = os.environ.get("ACCEL_REAL_CYBORG_DIR", "")
    if os.environ.get("ACCEL_REAL_CYBORG") != "1" or not os.path.exists(
            os.path.join(directory, "run", "url")):
        pytest.skip("set ACCEL_REAL_CYBORG=1 and ACCEL_REAL_CYBORG_DIR to "
                    "a started real Cyborg")
    with open(os.path.join(directory, "run", "url"),
              encoding="utf-8") as handle:
        url = handle.read().strip()
    driven = drive_real_cyborg.drive(url, suffix="-" + uuid.uuid4().hex[:6])
    source = os.environ.get("ACCEL_REAL_CYBORG_DB",
                            f"sqlite:///{directory}/data/cyborg.sqlite")
    return driven, source


def test_live_real_cyborg_database_imports(lite, live_cyborg, capsys):
    driven, source = live_cyborg
    assert run_import(lite.conf, source) == 0
    assert run_import(lite.conf, source, apply=True) == 0
    assert "imported as BindFailed" in capsys.readouterr().out
    profile = next(a for a in resolved(
        lite, next(iter(driven["instances"]))).values())[
        "device_profile_name"]
    nova_flow(lite, driven, profile, capsys, source)


def _placement(conn, method, url, body=None, ok=(200, 204)):
    response = conn.placement.request(url, method, json=body,
                                      microversion=placement.MICROVERSION)
    assert response.status_code in ok, response.text
    return response.json() if response.content else None


def test_placement_check_compares_allocations_with_bound_arqs(
        tmp_path, placement_server, placement_conn, capsys):
    # Cyborg's provider, as its agent made it, under a fresh compute node.
    root, host = placement.create_compute_node(placement_conn)
    rp_uuid = str(uuid.uuid4())
    rows = cyborg17.recording()
    rows["deployables"][0]["rp_uuid"] = rp_uuid
    instances = {}
    for arq in rows["extended_accelerator_requests"]:
        if arq["state"] == "Bound":
            arq["device_rp_uuid"] = rp_uuid
            arq["instance_uuid"] = instances.setdefault(
                arq["instance_uuid"], str(uuid.uuid4()))
    source = cyborg17.load(f"sqlite:///{tmp_path}/cyborg.sqlite", rows)
    _placement(placement_conn, "POST", "/resource_providers", {
        "uuid": rp_uuid, "name": f"{host}_FakeDevice",
        "parent_provider_uuid": root})
    _placement(placement_conn, "PUT", f"/resource_providers/{rp_uuid}/"
               "inventories", {"resource_provider_generation": 0,
                               "inventories": {"FPGA": {"total": 16}}})
    one, two = instances.values()
    for consumer, amount in ((one, 1), (two, 1)):
        _placement(placement_conn, "PUT", f"/allocations/{consumer}", {
            "allocations": {rp_uuid: {"resources": {"FPGA": amount}}},
            "project_id": PROJECT, "user_id": "nova",
            "consumer_generation": None, "consumer_type": "INSTANCE"})
    lite = make_cyborg(tmp_path, inventory=False)
    placement.apply_client_conf(lite.conf, "placement", placement_server.url)

    assert run_import(lite.conf, source) == 0
    out = capsys.readouterr().out
    assert (f"placement: deployable realcyborg-local_FakeDevice "
            f"({rows['deployables'][0]['uuid']}): Placement holds 2 FPGA "
            f"allocated on provider {rp_uuid}, 3 Bound ARQ(s)") in out

    # Nova's allocation of the two-ARQ server, as it really is: FPGA:2.
    body = _placement(placement_conn, "GET", f"/allocations/{two}")
    _placement(placement_conn, "PUT", f"/allocations/{two}", {
        "allocations": {rp_uuid: {"resources": {"FPGA": 2}}},
        "project_id": PROJECT, "user_id": "nova",
        "consumer_generation": body["consumer_generation"],
        "consumer_type": "INSTANCE"})
    assert run_import(lite.conf, source, apply=True) == 0
    out = capsys.readouterr().out
    assert ("placement: 1 provider(s) hold exactly the allocations of "
            "their Bound ARQs") in out
    # nothing was written to Placement
    usages = _placement(placement_conn, "GET",
                        f"/resource_providers/{rp_uuid}/usages")
    assert usages["usages"] == {"FPGA": 3}
    lite.db.dispose()
