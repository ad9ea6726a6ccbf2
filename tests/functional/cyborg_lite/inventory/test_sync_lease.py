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


"""``cyborg-lite-manage inventory sync`` holds the periodic sync's lease,
on sqlite, MariaDB and PostgreSQL: it never overlaps an API worker's pass,
waits a bounded time for one, gives the lease back when done (also after a
failure), and an API worker's next pass comes an interval after it.
"""

import datetime
import json
import os
import re
import threading
import time

import pytest
import sqlalchemy as sa

from accel_tools import standalone
from accel_tools.embedded.common import free_port
from cyborg_lite.cmd import manage
from cyborg_lite.db import leases as lease_db
from cyborg_lite.db import models
from cyborg_lite.inventory import lease as sync_lease
from tests.fixtures import cyborg as cyborg_fixtures
from tests.functional.cyborg_lite.inventory import test_sync_handles

LEASE = sync_lease.LEASE_NAME
WORKER = "api-worker-4242-0123456789abcdef"


def _config_file(tmp_path, db, ironic_url, host="unused.example.org",
                 document=None):
    """A config file: ``db``, ``[ironic]`` at ``ironic_url``, the sim agent
    serving ``host`` with ``document``'s devices."""
    sim_inventory = tmp_path / "sim-inventory.json"
    sim_inventory.write_text(json.dumps(
        document or cyborg_fixtures.load_example_inventory(host)))
    path = tmp_path / "cyborg_lite.conf"
    path.write_text(
        f"[DEFAULT]\nstate_path = {tmp_path}\n"
        f"[database]\nconnection = {db.url}\n"
        "[oslo_policy]\npolicy_file = none.yaml\n"
        f"[ironic]\nauth_type = none\nendpoint_override = {ironic_url}\n"
        f"[agent]\nhost = {host}\nsim_state_dir = {tmp_path / 'sim'}\n"
        f"sim_inventory_file = {sim_inventory}\nrpc_timeout = 5\n"
        "[programming]\nreconcile_on_start = false\n"
        "reconcile_interval = 0\n" + standalone.ini_text())
    return str(path)


def _sync(config_file, *args):
    with pytest.raises(SystemExit) as exit_info:
        manage.main(["--config-file", config_file, "inventory", "sync",
                     *args])
    return exit_info.value.code


def _applied_hosts(out):
    """Hosts of the result the command prints last (logs may come
    before)."""
    start = [m.start() for m in re.finditer(r"^\{$", out, re.M)][-1]
    return [summary["host"] for summary in json.loads(out[start:])["applied"]]


def _dead_ironic():
    return f"http://127.0.0.1:{free_port()}"


def _released_by_this_command(db):
    owner, expires_at = lease_db.get(db, LEASE)
    assert "inventory sync" in owner and f"pid {os.getpid()}" in owner
    assert expires_at < models.utcnow()


def _watch_lease(db):
    """Record, from another thread, each live holder of the lease until
    the returned ``stop`` is called; ``stop()`` returns the holders."""
    seen = []
    done = threading.Event()

    def watch():
        while not done.wait(0.02):
            holder = lease_db.get(db, LEASE)
            if (holder and holder[1] > models.utcnow()
                    and holder[0] not in seen):
                seen.append(holder[0])

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()

    def stop():
        done.set()
        thread.join(10)
        return seen
    return stop


def test_lease_held_by_another_owner_fails_clearly(db, tmp_path, capsys):
    assert lease_db.acquire(db, LEASE, WORKER, 600)
    config = _config_file(tmp_path, db, _dead_ironic())

    started = time.monotonic()
    code = _sync(config, "--wait", "1")
    waited = time.monotonic() - started

    out, err = capsys.readouterr()
    assert code == manage.LEASE_BUSY
    assert waited >= 1
    assert f"Waiting up to 1 s for the inventory sync lease, held by " \
           f"{WORKER}" in err
    assert f"Gave up after 1 s: the inventory sync lease is held by " \
           f"{WORKER}" in err
    assert "Nothing was changed" in err and "--wait" in err
    assert out == ""
    # the worker's lease is untouched
    owner, expires_at = lease_db.get(db, LEASE)
    assert owner == WORKER and expires_at > models.utcnow()


def test_free_lease_runs_holds_and_releases(
        db, tmp_path, capsys, ironic_server, baremetal):
    host, document = test_sync_handles._host_with_node(baremetal)
    config = _config_file(tmp_path, db, ironic_server.url, host,
                          document)

    stop_watching = _watch_lease(db)
    code = _sync(config, "--host", host)
    holders = stop_watching()

    out, err = capsys.readouterr()
    assert code == 0, err
    assert "Waiting" not in err
    assert _applied_hosts(out) == [host]
    assert test_sync_handles._handles(db, host)
    assert len(holders) == 1 and "inventory sync" in holders[0]
    _released_by_this_command(db)
    # an API worker takes the lease at once
    assert lease_db.acquire(db, LEASE, WORKER, 60)


def test_waits_for_the_running_pass_then_runs(
        db, tmp_path, capsys, ironic_server, baremetal):
    host, document = test_sync_handles._host_with_node(baremetal)
    config = _config_file(tmp_path, db, ironic_server.url, host,
                          document)
    assert lease_db.acquire(db, LEASE, WORKER, 600)
    # the worker's pass ends a second later
    ends = threading.Timer(
        1, lease_db.release, args=(db, LEASE, WORKER))
    ends.start()
    try:
        code = _sync(config, "--host", host, "--wait", "30")
    finally:
        ends.cancel()

    out, err = capsys.readouterr()
    assert code == 0, err
    assert f"held by {WORKER}" in err
    assert _applied_hosts(out) == [host]
    _released_by_this_command(db)


def test_failed_run_releases_the_lease(db, tmp_path, capsys):
    config = _config_file(tmp_path, db, _dead_ironic())

    # Ironic does not answer: the command fails halfway, and says so
    assert _sync(config) == 1
    err = capsys.readouterr().err
    assert "Inventory sync failed: Ironic or Placement did not answer" in err
    assert "Traceback" not in err

    _released_by_this_command(db)


def test_api_worker_pass_comes_an_interval_after_the_command(db, tmp_path):
    config = _config_file(tmp_path, db, _dead_ironic())
    assert _sync(config) == 1
    conf = cyborg_fixtures.make_conf(
        tmp_path, **{"database.connection": db.url,
                     "inventory.sync_interval": 300})
    worker = sync_lease.InventorySync(conf, db, programmer=None,
                                         owner=WORKER)

    # the command's pass just ended: no pass (Ironic is never asked)
    assert worker.due() is False
    assert worker.run_once() is None

    with db.transaction() as session:
        session.execute(
            sa.update(models.PeriodicLease)
            .where(models.PeriodicLease.name == LEASE)
            .values(expires_at=models.utcnow()
                    - datetime.timedelta(seconds=301)))
    assert worker.due() is True


def test_wait_must_be_seconds(db, tmp_path, capsys):
    config = _config_file(tmp_path, db, _dead_ironic())
    assert _sync(config, "--wait", "-1") == 2
    assert "'-1' is not a number of seconds" in capsys.readouterr().err
    assert lease_db.get(db, LEASE) is None
