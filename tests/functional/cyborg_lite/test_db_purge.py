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

"""``cyborg-lite-manage db purge`` on sqlite, MariaDB and PostgreSQL: what
is old and unused goes, in batches; what an instance, a boot in progress
or an unsent Nova event needs stays. The command itself: its report, its
dry run, and the cutoffs it refuses."""

import datetime
import uuid

import pytest
import sqlalchemy as sa

from cyborg_lite.api import app as app_mod
from cyborg_lite.cmd import manage
from cyborg_lite.db import engine as db_engine
from cyborg_lite.db import models
from cyborg_lite.db import purge as purge_db
from cyborg_lite.inventory import apply as inventory_apply
from tests.fixtures.cyborg import make_conf
from tests.fixtures.cyborg_server import make_inventory
from tests.functional.cyborg_lite.programming import env

OLD = models.utcnow() - datetime.timedelta(days=40)
CUTOFF = models.utcnow() - datetime.timedelta(days=30)


class Cloud:
    """An API on ``db_url`` with two hosts' inventories."""

    def __init__(self, tmp_path, db_url):
        self.conf = make_conf(tmp_path)
        self.conf.set_override("connection", db_url, group="database")
        self.db = db_engine.Database.from_conf(self.conf)
        self.db.sync()
        self.gone = make_inventory(handles_per_region=(2, 2))
        self.staying = make_inventory(handles_per_region=(2,))
        for document in (self.gone, self.staying):
            inventory_apply.apply_document(self.db, document)
        app = app_mod.create_app(self.conf, db=self.db, programmer=None)
        self.client = env.Client(app)
        self.profile = self.client.profile()

    def arq(self):
        (arq,) = self.client.arqs(self.profile)
        return arq

    def bind(self, arq, document):
        rp = document["devices"][0]["regions"][0]["rp_uuid"]
        status, body = self.client.bind([arq], rp, str(uuid.uuid4()),
                                        document["host"])
        assert status == 202, body

    def delete(self, arq):
        status, body = self.client.call(
            "DELETE", f"/v2/accelerator_requests?arqs={arq}", env.NOVA)
        assert status == 204, body

    def set_arq(self, arq, **values):
        self.db.run(lambda s: s.execute(
            sa.update(models.ARQ).where(models.ARQ.uuid == arq)
            .values(**values)))

    def age_everything(self, but_arqs=()):
        """Make every row 40 days old, as if the cloud had run since."""
        def _run(session):
            for model in (models.Device, models.Deployable,
                          models.AttachHandle, models.Attribute):
                session.execute(sa.update(model).values(
                    created_at=OLD, updated_at=OLD))
            session.execute(sa.update(models.ARQ).where(
                models.ARQ.uuid.not_in(but_arqs)).values(
                created_at=OLD, updated_at=OLD))
        self.db.run(_run)

    def rows(self, model):
        return self.db.read(lambda s: s.execute(
            sa.select(sa.func.count()).select_from(model)).scalar_one())

    def arq_uuids(self):
        return set(self.db.read(lambda s: s.execute(
            sa.select(models.ARQ.uuid)).scalars().all()))


@pytest.fixture
def cloud(tmp_path, db_url):
    return Cloud(tmp_path, db_url)


def _leftovers(cloud):
    """What a cloud leaves behind: returns the ARQs that must stay."""
    abandoned = cloud.arq()                      # Initial, old: goes
    failed = cloud.arq()                         # BindFailed, old: goes
    cloud.set_arq(failed, state="BindFailed", notification="failed")
    unsent = cloud.arq()                         # BindFailed, event due
    cloud.set_arq(unsent, state="BindFailed", notification="pending")
    bound = cloud.arq()                          # holds a handle: stays
    cloud.bind(bound, cloud.staying)
    # An instance on the host whose device leaves: its handle, region and
    # device are retired, then freed when its ARQ is deleted.
    on_gone = cloud.arq()
    cloud.bind(on_gone, cloud.gone)
    emptied = dict(cloud.gone, devices=[])
    inventory_apply.apply_document(cloud.db, emptied)
    cloud.delete(on_gone)
    recent = cloud.arq()                         # a boot being scheduled
    cloud.age_everything(but_arqs=[recent])
    now = models.utcnow()
    cloud.db.run(lambda s: s.execute(sa.insert(models.SchedulingLookup), [
        {"lock_trait": "CUSTOM_A", "units": 1, "created_at": OLD,
         "expires_at": OLD},
        {"lock_trait": "CUSTOM_B", "units": 1, "created_at": now,
         "expires_at": now + datetime.timedelta(minutes=3)}]))
    return {unsent, bound, recent}, {abandoned, failed}


EXPECTED = {"scheduling_lookups": 1, "arqs": 2,
            # the retired region's handle (the other was deleted when the
            # document dropped the device: it was free)
            "attach_handles": 1, "attributes": 1, "deployables": 1,
            "devices": 1}


@pytest.mark.parametrize("batch_size", [1000, 1])
def test_purge_deletes_what_nothing_needs(cloud, batch_size):
    kept, purged = _leftovers(cloud)
    arqs_before = cloud.arq_uuids()

    counted = purge_db.count(cloud.db, CUTOFF)
    assert cloud.arq_uuids() == arqs_before     # a dry run deletes nothing
    deleted = purge_db.purge(cloud.db, CUTOFF, batch_size=batch_size)

    assert counted == deleted == EXPECTED
    assert cloud.arq_uuids() == arqs_before - purged
    assert kept <= cloud.arq_uuids()
    assert cloud.rows(models.SchedulingLookup) == 1
    # Only the host still in Ironic keeps its inventory.
    hosts = cloud.db.read(lambda s: set(s.execute(
        sa.select(models.Device.hostname)).scalars()))
    assert hosts == {cloud.staying["host"]}
    assert cloud.rows(models.AttachHandle) == 2
    # Nothing left to purge, and what stays still works.
    assert set(purge_db.purge(cloud.db, CUTOFF).values()) == {0}
    status, body = cloud.client.call(
        "GET", "/v2/accelerator_requests", env.NOVA)
    assert status == 200 and len(body["arqs"]) == len(kept), body


def test_purge_keeps_what_changed_since_the_cutoff(cloud):
    _leftovers(cloud)

    long_ago = OLD - datetime.timedelta(days=1)

    assert set(purge_db.count(cloud.db, long_ago).values()) == {0}
    assert set(purge_db.purge(cloud.db, long_ago).values()) == {0}


def test_purge_keeps_a_retired_region_still_in_use(cloud):
    on_gone = cloud.arq()
    cloud.bind(on_gone, cloud.gone)
    inventory_apply.apply_document(cloud.db, dict(cloud.gone, devices=[]))
    cloud.age_everything()

    deleted = purge_db.purge(cloud.db, CUTOFF)

    assert (deleted["deployables"], deleted["devices"],
            deleted["attach_handles"]) == (0, 0, 0)
    assert on_gone in cloud.arq_uuids()


def _manage(cloud, tmp_path, *args):
    config = tmp_path / "purge.conf"
    config.write_text(f"[DEFAULT]\nstate_path = {tmp_path}\n"
                      f"[database]\nconnection = {cloud.db.url}\n")
    with pytest.raises(SystemExit) as exit_info:
        manage.main(["--config-file", str(config), "db", "purge", *args])
    return exit_info.value.code


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_command_reports_a_dry_run_then_purges(cloud, tmp_path, capsys):
    _leftovers(cloud)

    dry = _manage(cloud, tmp_path, "--before", "30", "--dry-run")
    dry_out = capsys.readouterr().out
    wet = _manage(cloud, tmp_path, "--before", "30d", "--batch-size", "1")
    wet_out = capsys.readouterr().out

    assert (dry, wet) == (0, 0)
    assert ": would delete 7 row(s) unchanged since " in dry_out
    assert ": deleted 7 row(s) unchanged since " in wet_out
    for out in (dry_out, wet_out):
        assert "  arqs: 2\n" in out and "  scheduling_lookups: 1\n" in out
    assert len(cloud.arq_uuids()) == 3


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
@pytest.mark.parametrize("before, message", [
    ("0", "is less than a day ago"),
    ("2999-01-01", "is less than a day ago"),
    ("last week", "is neither a number of days (30) nor a date"),
    ("nan", "is not a number"),
])
def test_command_refuses_a_bad_cutoff(cloud, tmp_path, capsys, before,
                                      message):
    _leftovers(cloud)
    arqs = cloud.arq_uuids()

    code = _manage(cloud, tmp_path, "--before", before)

    assert code == 2
    assert message in capsys.readouterr().err
    assert cloud.arq_uuids() == arqs


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_command_takes_a_utc_date(cloud, tmp_path, capsys):
    _leftovers(cloud)
    day = (CUTOFF).date().isoformat()

    assert _manage(cloud, tmp_path, "--before", f"{day}T00:00:00Z",
                   "--dry-run") == 0
    assert "would delete 7 row(s)" in capsys.readouterr().out
