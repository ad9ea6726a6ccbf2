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

"""oslo.db's ``[database]`` options reach the engine and its sessions.

``mysql_wsrep_sync_wait`` is checked on a plain MariaDB (the variable
exists there, Galera or not): every pooled connection, old or new, carries
it, so every read through cyborg_lite is causal on Galera.
"""

import pytest
import sqlalchemy as sa

from cyborg_lite.db import engine as db_engine
from tests.fixtures.cyborg import make_conf
from tests.fixtures.databases import database


@pytest.fixture
def mariadb_url(tmp_path):
    with database("mariadb", tmp_path) as url:
        yield url


def _session_value(db, statement):
    with db.transaction(read_only=True) as session:
        return session.execute(sa.text(statement)).scalar_one()


@pytest.mark.mariadb
def test_wsrep_sync_wait_and_sql_mode_set_on_every_connection(
        tmp_path, mariadb_url):
    conf = make_conf(tmp_path, **{
        "database.connection": mariadb_url,
        "database.mysql_wsrep_sync_wait": 1,
        "database.mysql_sql_mode": "TRADITIONAL",
        "database.max_pool_size": 3, "database.max_overflow": 2,
        "database.pool_timeout": 7, "database.connection_recycle_time": 60})
    db = db_engine.Database.from_conf(conf)
    try:
        # Several connections at once, so the pool holds more than one.
        sessions = [db._reader() for _ in range(3)]
        values = [s.execute(sa.text(
            "SELECT @@session.wsrep_sync_wait, @@session.sql_mode, "
            "@@session.tx_isolation")).one() for s in sessions]
        for session in sessions:
            session.close()
        for wsrep_sync_wait, sql_mode, isolation in values:
            assert wsrep_sync_wait == 1
            assert "STRICT_ALL_TABLES" in sql_mode  # what TRADITIONAL sets
            assert isolation == "READ-COMMITTED"
        pool = db.engine.pool
        assert (pool.size(), pool._max_overflow, pool._timeout,
                pool._recycle) == (3, 2, 7, 60)
    finally:
        db.dispose()


@pytest.mark.mariadb
def test_wsrep_sync_wait_unset_leaves_the_server_default(mariadb_url):
    db = db_engine.Database(mariadb_url)
    try:
        assert _session_value(db, "SELECT @@session.wsrep_sync_wait") == 0
    finally:
        db.dispose()


def test_deadlock_retries_come_from_db_max_retries(tmp_path):
    conf = make_conf(tmp_path, **{"database.db_max_retries": 2})
    db = db_engine.Database.from_conf(conf)
    assert db.retries == 2
    db.dispose()
    # cyborg_lite's default, as max_retries_on_deadlock had it.
    assert db_engine.Database.from_conf(make_conf(tmp_path)).retries == 5
