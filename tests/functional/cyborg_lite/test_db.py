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


"""Migrations, persistence and races on sqlite, MariaDB and PostgreSQL."""

import collections
import threading
import time
import uuid

from alembic import autogenerate
from alembic import migration as alembic_migration
from oslo_db import exception as db_exception
import pytest
import sqlalchemy as sa

from cyborg_lite import arq_states as states
from cyborg_lite import binding
from cyborg_lite import exception
from cyborg_lite.db import arqs as arq_db
from cyborg_lite.db import attach_handles as handle_db
from cyborg_lite.db import bind_statements
from cyborg_lite.db import deployables as deployable_db
from cyborg_lite.db import device_profiles as profile_db
from cyborg_lite.db import engine as db_engine
from cyborg_lite.db import migration
from cyborg_lite.db import models
from cyborg_lite.inventory import apply as inventory_apply
from tests.fixtures.cyborg import FPGA_REGION0_RP
from tests.fixtures.cyborg import load_example_inventory
from tests.fixtures.cyborg_server import make_inventory


@pytest.fixture
def db(db_url):
    database = db_engine.Database(db_url)
    database.sync()
    inventory_apply.apply_document(database, load_example_inventory())
    yield database
    database.dispose()


def _profile_and_arqs(db, count):
    profile = profile_db.create(
        db, name=f"dp-{uuid.uuid4().hex[:8]}",
        groups=[{"resources:FPGA": str(count)}])
    return arq_db.create_many(db, profile.name, "p1", [0] * count)


def test_migrations_match_the_models(db):
    assert migration.current(db.engine) == migration.head()
    with db.engine.connect() as connection:
        context = alembic_migration.MigrationContext.configure(connection)
        diff = autogenerate.compare_metadata(context, models.Base.metadata)
    assert diff == []
    # syncing again is a no-op
    db.sync()
    assert migration.current(db.engine) == migration.head()


def test_device_profile_round_trip_and_unique_name(db):
    groups = [{"resources:FPGA": "1", "accel:function_id": "gzip"}]
    profile = profile_db.create(db, name="p", groups=groups)
    assert profile_db.get(db, profile.uuid).groups == groups
    assert profile_db.get(db, "p").uuid == profile.uuid
    with pytest.raises(exception.DeviceProfileExists):
        profile_db.create(db, name="p", groups=groups)
    with pytest.raises(exception.DeviceProfileUuidExists):
        profile_db.create(db, name="q", groups=groups, uuid=profile.uuid)


def test_state_move_is_conditional_and_idempotent(db):
    arq = _profile_and_arqs(db, 1)[0]
    with db.transaction() as session:
        row = session.get(models.ARQ, arq.id)
        assert arq_db.move(session, row, states.BIND_STARTED) is True
        assert arq_db.move(session, row, states.BIND_STARTED) is False
        assert arq_db.move(session, row, states.BOUND) is True
        with pytest.raises(exception.ARQBadState):
            arq_db.move(session, row, states.BIND_STARTED)
    assert arq_db.get(db, arq.uuid).state == states.BOUND


def test_two_sessions_racing_for_one_handle(db):
    """The second session waits on the first's row lock and then finds the
    handle taken: never both."""
    arqs = _profile_and_arqs(db, 2)
    with db.transaction() as session:
        gpu = deployable_db.by_rp(session,
                                      "1123b2d5-74a2-5528-b9c5-2a0137c3b5af")
        gpu_id = gpu.id
    first_has_it = threading.Event()
    results = {}

    def first():
        with db.transaction() as session:
            results["first"] = handle_db.take_free(session, gpu_id,
                                                       arqs[0].id)
            first_has_it.set()
            time.sleep(0.5)  # hold the lock while the second one tries

    def second():
        assert first_has_it.wait(10)
        with db.transaction() as session:
            results["second"] = handle_db.take_free(session, gpu_id,
                                                        arqs[1].id)

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert results["first"] is not None
    assert results["second"] is None
    with db.transaction() as session:
        holders = session.execute(
            sa.select(models.AttachHandle.arq_id).where(
                models.AttachHandle.deployable_id == gpu_id)).scalars().all()
    assert holders == [arqs[0].id]


def test_concurrent_binds_never_share_a_handle(db):
    """12 instances race for region 0 (4 handles): exactly 4 bind."""
    arqs = _profile_and_arqs(db, 12)
    outcomes = []
    lock = threading.Lock()
    start = threading.Barrier(len(arqs))

    def bind(arq):
        start.wait(10)
        try:
            binding.bind(db, {arq.uuid: {
                "hostname": "compute-1.example.org",
                "device_rp_uuid": FPGA_REGION0_RP,
                "instance_uuid": str(uuid.uuid4())}}, notify=False)
            result = "bound"
        except exception.NoFreeAttachHandle:
            result = "no handle"
        with lock:
            outcomes.append(result)

    threads = [threading.Thread(target=bind, args=(a,)) for a in arqs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(outcomes) == ["bound"] * 4 + ["no handle"] * 8
    rows = arq_db.get_all(db, uuids=[a.uuid for a in arqs])
    assert sorted(r.state for r in rows) == (["BindFailed"] * 8
                                             + ["Bound"] * 4)
    with db.transaction() as session:
        holders = session.execute(
            sa.select(models.AttachHandle.arq_id).where(
                models.AttachHandle.in_use.is_(True))).scalars().all()
    assert len(holders) == len(set(holders)) == 4
    assert set(holders) == {r.id for r in rows if r.state == "Bound"}


def test_identical_binds_racing_bind_once(db):
    """Nova retrying a PATCH while the first is still running: every copy
    of the same bind succeeds, the ARQ holds one handle; a racer for
    another instance is refused."""
    arq = _profile_and_arqs(db, 1)[0]
    target = {"hostname": "compute-1.example.org",
              "device_rp_uuid": FPGA_REGION0_RP,
              "instance_uuid": str(uuid.uuid4())}
    outcomes = []
    lock = threading.Lock()
    start = threading.Barrier(7)

    def bind(fields):
        start.wait(10)
        try:
            binding.bind(db, {arq.uuid: dict(fields)}, notify=False)
            result = "ok"
        except exception.ARQBadState:
            result = "refused"
        with lock:
            outcomes.append((fields["instance_uuid"], result))

    other = dict(target, instance_uuid=str(uuid.uuid4()))
    threads = [threading.Thread(target=bind, args=(target,))
               for _ in range(6)]
    threads.append(threading.Thread(target=bind, args=(other,)))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    row = arq_db.get(db, arq.uuid)
    assert row.state == states.BOUND
    assert row.instance_uuid in (target["instance_uuid"],
                                 other["instance_uuid"])
    winner = row.instance_uuid
    assert sorted(outcomes) == sorted(
        (instance, "ok" if instance == winner else "refused")
        for instance, _ in outcomes)
    with db.transaction() as session:
        holders = session.execute(
            sa.select(models.AttachHandle.arq_id).where(
                models.AttachHandle.in_use.is_(True))).scalars().all()
    assert holders == [arq.id]


def _is_deadlock(error):
    return (getattr(error, "pgcode", None) in ("40P01", "40001")
            or getattr(error, "args", (None,))[:1] == (1213,))


def test_concurrent_binds_do_not_deadlock(db):
    """16 binds at a time on one region with handles for all: each takes
    a handle no other holds and none waits in a cycle (a deadlock is
    retried, but costs a rollback, and the boot once retries run out)."""
    document = make_inventory(handles_per_region=(200,))
    inventory_apply.apply_document(db, document)
    rp_uuid = document["devices"][0]["regions"][0]["rp_uuid"]
    arqs = iter(_profile_and_arqs(db, 160))
    deadlocks, outcomes = [], collections.Counter()
    lock = threading.Lock()

    def on_error(context):
        if _is_deadlock(context.original_exception):
            deadlocks.append(context.original_exception)

    for engine in db.engines:
        sa.event.listen(engine, "handle_error", on_error)

    def binder():
        while True:
            with lock:
                arq = next(arqs, None)
            if arq is None:
                return
            binding.bind(db, {arq.uuid: {
                "hostname": document["host"], "device_rp_uuid": rp_uuid,
                "instance_uuid": str(uuid.uuid4())}}, notify=False)
            with lock:
                outcomes["bound"] += 1

    threads = [threading.Thread(target=binder) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert (outcomes, deadlocks) == ({"bound": 160}, [])


def _binding_to_region0(db, arq, outcome, refusal, refused=None):
    """A started thread binding ``arq`` to region 0 of a new instance: it
    appends "bound" to ``outcome``, or ``refused`` (the error's message
    when None) when ``refusal`` is raised."""
    def bind():
        try:
            binding.bind(db, {arq.uuid: {
                "hostname": "compute-1.example.org",
                "device_rp_uuid": FPGA_REGION0_RP,
                "instance_uuid": str(uuid.uuid4())}}, notify=False)
            outcome.append("bound")
        except refusal as error:
            outcome.append(refused or error.message)

    binder = threading.Thread(target=bind)
    binder.start()
    return binder


class _RollBack(Exception):
    pass


@pytest.mark.parametrize("holder_commits", [False, True],
                         ids=["holder-rolls-back", "holder-commits"])
def test_a_bind_waits_for_the_handles_another_transaction_holds(
        db, holder_commits):
    """Every free handle of the region is taken by a transaction that has
    not ended yet: a bind waits for it, then takes a handle (it rolled
    back) or is refused (it committed). An ARQ is never Bound without a
    handle, whichever statements the database binds with."""
    holders = _profile_and_arqs(db, 4)
    arq = _profile_and_arqs(db, 1)[0]
    with db.transaction() as session:
        region_id = deployable_db.by_rp(session, FPGA_REGION0_RP).id
    held, release = threading.Event(), threading.Event()

    def hold():
        try:
            with db.transaction() as session:
                for holder in holders:
                    assert handle_db.take_free(session, region_id,
                                               holder.id) is not None
                held.set()
                assert release.wait(10)
                if not holder_commits:
                    raise _RollBack()
        except _RollBack:
            pass

    holder = threading.Thread(target=hold)
    holder.start()
    assert held.wait(10)
    outcome = []
    binder = _binding_to_region0(
        db, arq, outcome, exception.NoFreeAttachHandle, "no handle")
    time.sleep(0.3)
    assert outcome == []  # waiting for the holder
    release.set()
    holder.join(30)
    binder.join(30)
    with db.transaction() as session:
        held_by_arq = session.execute(
            sa.select(sa.func.count()).where(
                models.AttachHandle.arq_id == arq.id)).scalar_one()
    state = arq_db.get(db, arq.uuid).state
    if holder_commits:
        assert (outcome, state, held_by_arq) == (
            ["no handle"], states.BIND_FAILED, 0)
    else:
        assert (outcome, state, held_by_arq) == (["bound"], states.BOUND, 1)


def test_an_instant_bind_waits_for_a_programming_start_and_sees_it(db):
    """A programming run starts on the region (its row locked, its state
    changed) between the bind's read and its write: the bind waits for it
    and is refused, holding no handle, rather than bind to a region about
    to be reprogrammed."""
    arq = _profile_and_arqs(db, 1)[0]
    locked, release = threading.Event(), threading.Event()

    def start_programming():
        with db.transaction() as session:
            region = session.execute(
                sa.select(models.Deployable)
                .where(models.Deployable.rp_uuid == FPGA_REGION0_RP)
                .with_for_update()).scalar_one()
            region.state = "programming"
            region.target_function_id = "nlb3"
            session.flush()
            locked.set()
            assert release.wait(10)

    programmer = threading.Thread(target=start_programming)
    programmer.start()
    assert locked.wait(10)
    outcome = []
    binder = _binding_to_region0(db, arq, outcome,
                                 exception.DeployableNotReady)
    time.sleep(0.3)
    assert outcome == []  # waiting for the programming start
    release.set()
    programmer.join(30)
    binder.join(30)
    assert len(outcome) == 1 and "being programmed with" in outcome[0], outcome
    with db.transaction() as session:
        held = session.execute(sa.select(sa.func.count()).where(
            models.AttachHandle.arq_id == arq.id)).scalar_one()
    assert (arq_db.get(db, arq.uuid).state, held) == (
        states.BIND_FAILED, 0)


def test_the_one_statement_bind_changes_all_or_nothing(db):
    """The statement that binds in autocommit checks the region as read,
    locks the ARQ, takes a handle and moves the ARQ: when any of it
    cannot be done (the region changed, no handle is free) it changes
    nothing at all."""
    with db.transaction() as session:
        if not bind_statements.strategy(session).at_once:
            pytest.skip("one transaction per bind on this database")
    holders = _profile_and_arqs(db, 4)
    arq = _profile_and_arqs(db, 1)[0]

    def bind(session, row, region_id, seen):
        return bind_statements.bind_at_once(
            session, row, region_id, seen, deployable_id=region_id,
            hostname="compute-1.example.org",
            device_rp_uuid=FPGA_REGION0_RP,
            instance_uuid=str(uuid.uuid4()))

    def state_and_handles(session, arq_id):
        return (session.get(models.ARQ, arq_id).state,
                session.execute(sa.select(sa.func.count()).where(
                    models.AttachHandle.arq_id == arq_id)).scalar_one())

    with db.transaction() as session:
        region = deployable_db.by_rp(session, FPGA_REGION0_RP)
        seen = {"state": region.state, "function_id": "nlb3"}  # stale
        row = session.get(models.ARQ, arq.id)
        assert bind(session, row, region.id, seen) is False
        assert state_and_handles(session, arq.id) == (states.INITIAL, 0)
        seen["function_id"] = region.function_id
        for holder in holders:  # every handle taken
            assert handle_db.take_free(session, region.id,
                                       holder.id) is not None
        assert bind(session, row, region.id, seen) is False
        assert state_and_handles(session, arq.id) == (states.INITIAL, 0)
        handle_db.release(session, [holders[0].id])
        assert bind(session, row, region.id, seen) is True
        session.expire_all()
        assert state_and_handles(session, arq.id) == (states.BOUND, 1)


def test_reads_do_not_wait_for_a_writer(db):
    """GETs keep answering while a write transaction holds the lock (on
    sqlite a write takes the whole database)."""
    arq = _profile_and_arqs(db, 1)[0]
    read = {}
    with db.transaction() as session:
        arq_db.move(session, session.get(models.ARQ, arq.id),
                    states.BIND_STARTED)
        session.flush()

        def reader():
            read["arq"] = arq_db.get(db, arq.uuid)

        thread = threading.Thread(target=reader)
        thread.start()
        thread.join(10)
        assert not thread.is_alive(), "the read waited for the writer"
    assert read["arq"].state == states.INITIAL  # the committed state
    assert arq_db.get(db, arq.uuid).state == states.BIND_STARTED


def test_inventory_keeps_handle_in_use_until_unbound(db):
    arq = _profile_and_arqs(db, 1)[0]
    binding.bind(db, {arq.uuid: {"hostname": "h",
                                 "device_rp_uuid": FPGA_REGION0_RP,
                                 "instance_uuid": str(uuid.uuid4())}},
                 notify=False)
    document = load_example_inventory()
    fpga = document["devices"][0]
    document["devices"] = document["devices"][1:]  # the FPGA vanished
    summary = inventory_apply.apply_document(db, document)
    assert summary["devices"]["retired"] == 1
    assert summary["attach_handles"]["retired"] == 1
    assert arq_db.get(db, arq.uuid).state == "Bound"
    # same document again: nothing changes
    assert inventory_apply.apply_document(db, document)["changed"] is False
    binding.unbind(db, [arq.uuid])
    summary = inventory_apply.apply_document(db, document)
    assert summary["devices"]["deleted"] == 1
    # and it comes back when the document lists it again
    document["devices"].insert(0, fpga)
    summary = inventory_apply.apply_document(db, document)
    assert summary["devices"]["created"] == 1


def test_a_transactions_first_statement_is_part_of_it(db):
    """The first statement of a transaction (sent with its BEGIN on
    PostgreSQL) is seen by no one before the COMMIT, and rolled back with
    the rest on an error."""
    arq = _profile_and_arqs(db, 1)[0]
    table = models.ARQ.__table__
    seen = {}

    class Abandoned(Exception):
        pass

    with pytest.raises(Abandoned):
        with db.transaction() as session:
            session.execute(sa.update(table).where(table.c.id == arq.id)
                            .values(hostname="uncommitted"))
            thread = threading.Thread(target=lambda: seen.update(
                hostname=arq_db.get(db, arq.uuid).hostname))
            thread.start()
            thread.join(10)
            raise Abandoned()
    assert seen == {"hostname": None}
    assert arq_db.get(db, arq.uuid).hostname is None


def test_arqs_are_made_from_the_profile_their_name_names_now(db):
    """A profile deleted and created again under its name: the next ARQs
    are made from the new one; once it is deleted too, the name is
    unknown (a process may remember what a name named)."""
    name = f"dp-{uuid.uuid4().hex[:8]}"

    def one_each(group):
        return 1

    profile_db.create(db, name=name, groups=[{"resources:FPGA": "1"}])
    assert arq_db.create_from_profile(db, name, "p1", one_each)
    assert arq_db.create_from_profile(db, name, "p1", one_each)
    with db.transaction() as session:
        arq_db.delete_rows(session, [a.id for a in arq_db.get_all(
            session, instance_uuid=None) if a.device_profile_name == name])
    profile_db.delete(db, [name])
    again = profile_db.create(db, name=name, groups=[
        {"resources:FPGA": "1"}, {"resources:GPU": "1"}])
    arqs = arq_db.create_from_profile(db, name, "p1", one_each)
    assert [(a.device_profile_id, a.device_profile_group_id)
            for a in arqs] == [(again.id, 0), (again.id, 1)]
    assert {a.uuid for a in arq_db.get_all(db, uuids=[
        a.uuid for a in arqs])} == {a.uuid for a in arqs}
    with db.transaction() as session:
        arq_db.delete_rows(session, [a.id for a in arqs])
    profile_db.delete(db, [name])
    with pytest.raises(exception.DeviceProfileNotFound):
        arq_db.create_from_profile(db, name, "p1", one_each)


def test_migration_0010_keeps_handles_and_lets_instances_differ(db_url):
    """Handles stored before 0010 keep their rows and uuids (instance 0);
    afterwards a parent holds several instances of one mdev type."""
    database = db_engine.Database(db_url)
    try:
        migration.upgrade(database.engine, "0009")
        now = models.utcnow()
        with database.engine.begin() as connection:
            # NOTE(test): the tables as 0009 left them, not as the models
            # describe them now.
            tables = sa.MetaData()
            tables.reflect(connection)
            device = connection.execute(tables.tables["devices"].insert(), {
                "uuid": "d1", "source_id": "gpu0", "type": "GPU",
                "vendor": "0x10de", "model": "T4", "std_board_info": "{}",
                "hostname": "h", "pci_address": "0000:3b:00.0",
                "program_mode": "single", "status": "enabled",
                "retired": False, "created_at": now}).inserted_primary_key[0]
            deployable = connection.execute(
                tables.tables["deployables"].insert(), {
                    "uuid": "p1", "name": "h_gpu", "device_id": device,
                    "region_id": "0", "rp_uuid": "rp1",
                    "resource_class": "VGPU", "num_accelerators": 1,
                    "state": "ready", "retired": False,
                    "created_at": now}).inserted_primary_key[0]
            connection.execute(tables.tables["attach_handles"].insert(), {
                "uuid": "h1", "deployable_id": deployable, "type": "MDEV",
                "pci_address": "0000:3b:00.0", "mdev_type": "nvidia-222",
                "in_use": False, "retired": False, "created_at": now})

        database.sync()

        with database.transaction() as session:
            (handle,) = session.execute(
                sa.select(models.AttachHandle)).scalars().all()
            assert (handle.uuid, handle.mdev_index) == ("h1", 0)
            session.add(models.AttachHandle(
                uuid="h2", deployable_id=handle.deployable_id, type="MDEV",
                pci_address=handle.pci_address, mdev_type=handle.mdev_type,
                mdev_index=1, in_use=False, retired=False))
        with pytest.raises(db_exception.DBDuplicateEntry):
            with database.transaction() as session:
                session.add(models.AttachHandle(
                    uuid="h3", deployable_id=deployable, type="MDEV",
                    pci_address="0000:3b:00.0", mdev_type="nvidia-222",
                    mdev_index=1, in_use=False, retired=False))
    finally:
        database.dispose()
