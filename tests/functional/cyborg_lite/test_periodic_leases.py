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



"""The periodic-task lease on sqlite, MariaDB and PostgreSQL: of workers
racing for it one wins; the holder renews; an expired or released lease
goes to another worker."""

import datetime
import threading
import uuid

import sqlalchemy as sa

from cyborg_lite.db import engine as db_engine
from cyborg_lite.db import leases as lease_db
from cyborg_lite.db import models


def _name():
    return f"task-{uuid.uuid4().hex[:8]}"


def test_racing_workers_one_wins(db):
    name = _name()
    workers = 6
    handles = [db_engine.Database(db.url) for _ in range(workers)]
    barrier = threading.Barrier(workers)
    won = {}

    def race(index):
        barrier.wait()
        won[index] = lease_db.acquire(
            handles[index], name, f"owner-{index}", 60)

    threads = [threading.Thread(target=race, args=(i,))
               for i in range(workers)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    finally:
        for handle in handles:
            handle.dispose()
    assert len(won) == workers
    winners = [i for i, ok in won.items() if ok]
    assert len(winners) == 1, won
    owner, _expires = lease_db.get(db, name)
    assert owner == f"owner-{winners[0]}"


def test_holder_renews_others_wait_until_expiry(db):
    name = _name()
    assert lease_db.acquire(db, name, "a", 60) is True
    assert lease_db.acquire(db, name, "b", 60) is False
    _owner, first = lease_db.get(db, name)
    assert lease_db.acquire(db, name, "a", 600) is True
    owner, renewed = lease_db.get(db, name)
    assert owner == "a" and renewed > first
    assert lease_db.acquire(db, name, "b", 60) is False

    # "a" died: it stopped renewing and its lease ran out.
    with db.transaction() as session:
        session.execute(
            sa.update(models.PeriodicLease)
            .where(models.PeriodicLease.name == name)
            .values(expires_at=models.utcnow()
                    - datetime.timedelta(seconds=5)))
    assert lease_db.acquire(db, name, "b", 60) is True
    assert lease_db.get(db, name)[0] == "b"
    assert lease_db.acquire(db, name, "a", 60) is False


def test_release_hands_over_and_ignores_non_holders(db):
    name = _name()
    assert lease_db.acquire(db, name, "a", 60) is True
    lease_db.release(db, name, "b")
    assert lease_db.acquire(db, name, "b", 60) is False
    lease_db.release(db, name, "a")
    assert lease_db.acquire(db, name, "b", 60) is True
