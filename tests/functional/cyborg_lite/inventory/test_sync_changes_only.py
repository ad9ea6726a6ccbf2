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

"""The periodic inventory sync against real Ironic costs what changed: a
pass where no document changed writes nothing, a changed document is
applied alone, Ironic is read page by page, and a full pass still repairs
what was changed behind the sync's back."""

import threading
import time
import uuid

import pytest
import sqlalchemy as sa

from cyborg_lite.db import engine as db_engine
from cyborg_lite.db import models
from cyborg_lite.inventory import ironic as ironic_inventory
from cyborg_lite.inventory import lease as sync_lease
from tests.fixtures import cyborg as cyborg_fixtures
from tests.functional import documents
from tests.functional.cyborg_lite.inventory import test_sync_handles


class Writes:
    """Counts the INSERT/UPDATE/DELETE statements a database runs."""

    def __init__(self, db):
        self.count = 0
        sa.event.listen(db.engine, "before_cursor_execute", self._seen)

    def _seen(self, conn, cursor, statement, *args):
        if statement.lstrip().split(None, 1)[0].upper() in (
                "INSERT", "UPDATE", "DELETE"):
            self.count += 1

    def since(self, before):
        return self.count - before


@pytest.fixture
def db(tmp_path):
    database = db_engine.Database(
        f"sqlite:///{tmp_path}/{uuid.uuid4().hex}.sqlite")
    database.sync()
    yield database
    database.dispose()


def _nodes(baremetal, count):
    """``count`` nodes whose documents (with handles) name their own
    host; returns ``{host: (node, document)}``."""
    prefix = uuid.uuid4().hex[:8]
    made = {}
    for index in range(count):
        host = f"changes-{prefix}-{index}.example.org"
        node = baremetal.create_node(driver="fake-hardware", name=host,
                                     **test_sync_handles.FAKE_INTERFACES)
        document = documents.document(host, node.id, [
            documents.fpga(node.id, 0, handles=2)])
        baremetal.update_node(node, extra={"accelerators": document})
        made[host] = (node, document)
    return made


def _ours(result, made):
    return sorted(s["host"] for s in result["applied"] if s["host"] in made)


def _sync(db, conn, made, **kwargs):
    result = ironic_inventory.sync(db, conn, **kwargs)
    result["applied_here"] = _ours(result, made)
    return result


def test_a_pass_without_changes_writes_nothing(ironic_server, baremetal,
                                               db):
    made = _nodes(baremetal, 3)
    conn = ironic_server.connection()
    writes = Writes(db)
    # Pages of two: every node is still found.
    first = _sync(db, conn, made, full=False, page_size=2)
    assert first["applied_here"] == sorted(made)

    before = writes.count
    again = _sync(db, conn, made, full=False, page_size=2)
    assert again["applied_here"] == []
    assert again["unchanged"] >= 3
    assert writes.since(before) == 0

    # One document changes: only its host is applied.
    host = sorted(made)[1]
    node, document = made[host]
    document["devices"][0]["regions"][0]["attach_handles"].append(
        {"type": "PCI", "pci_address": "0000:5e:00.7"})
    baremetal.update_node(node, extra={"accelerators": document})
    before = writes.count
    changed = _sync(db, conn, made, full=False, page_size=2)
    assert changed["applied_here"] == [host]
    assert writes.since(before) > 0
    with db.transaction(read_only=True) as session:
        assert "0000:5e:00.7" in session.scalars(
            sa.select(models.AttachHandle.pci_address)
            .join(models.Deployable)
            .join(models.Device)
            .where(models.Device.hostname == host)).all()


def test_full_pass_repairs_what_changed_behind_the_sync(ironic_server,
                                                        baremetal, db):
    made = _nodes(baremetal, 2)
    conn = ironic_server.connection()
    _sync(db, conn, made, full=False)
    host = sorted(made)[0]
    with db.transaction() as session:  # an operator deleted a handle
        handle = session.scalars(
            sa.select(models.AttachHandle).join(models.Deployable)
            .join(models.Device).where(models.Device.hostname == host)
        ).first()
        session.delete(handle)
    assert _sync(db, conn, made, full=False)["applied_here"] == []
    full = _sync(db, conn, made, full=True)
    assert full["applied_here"] == sorted(made)
    assert full["applied"][full["applied"].index(next(
        s for s in full["applied"] if s["host"] == host))][
        "attach_handles"]["created"] == 1


def test_more_changes_than_a_page_are_read_in_a_second_pass(
        ironic_server, baremetal, db):
    made = _nodes(baremetal, 3)
    conn = ironic_server.connection()
    result = _sync(db, conn, made, full=False, page_size=1)
    assert result["applied_here"] == sorted(made)
    assert _sync(db, conn, made, full=False,
                 page_size=1)["applied_here"] == []


def test_an_invalid_change_is_skipped_and_the_host_kept(ironic_server,
                                                       baremetal, db):
    made = _nodes(baremetal, 1)
    conn = ironic_server.connection()
    _sync(db, conn, made, full=False)
    (host, (node, document)), = made.items()
    document["devices"][0]["type"] = "TOASTER"
    baremetal.update_node(node, extra={"accelerators": document})
    try:
        result = _sync(db, conn, made, full=False)
        assert result["applied_here"] == []
        assert "invalid document" in result["skipped"][node.id]
        with db.transaction(read_only=True) as session:
            assert session.scalar(
                sa.select(sa.func.count(models.Device.id))
                .where(models.Device.hostname == host)) == 1
        # A sync of another host does not mention it.
        assert node.id not in _sync(db, conn, made,
                                    host="elsewhere")["skipped"]
    finally:
        baremetal.delete_node(node)  # the Ironic is shared by the session


def test_a_pass_longer_than_the_interval_keeps_the_lease(tmp_path, db,
                                                         monkeypatch):
    # A pass of 2.5 s with a 1 s interval (and lease): the lease is
    # renewed while it runs, so a second worker never starts another.
    monkeypatch.setattr(sync_lease, "LEASE_MARGIN", 0)
    running = threading.Event()
    passes = []

    def slow_pass(conf, db, programmer, host=None, full=True):
        passes.append(full)
        running.set()
        time.sleep(2.5)
        return {"applied": [], "skipped": {}, "unchanged": 0,
                "not_in_placement": {}, "handles": {}}

    monkeypatch.setattr(ironic_inventory, "sync_from_ironic", slow_pass)
    conf = cyborg_fixtures.make_conf(tmp_path)
    conf.set_override("sync_interval", 1, group="inventory")
    first = sync_lease.InventorySync(conf, db, None, owner="first")
    second = sync_lease.InventorySync(conf, db, None, owner="second")
    worker = threading.Thread(target=first.run_once)
    worker.start()
    assert running.wait(5)
    tried = 0
    while worker.is_alive():
        assert second.run_once() is None
        tried += 1
        time.sleep(0.1)
    worker.join()
    assert passes == [True] and tried >= 10
