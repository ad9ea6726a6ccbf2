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

"""Which driver errors mean "the database cannot be used now" (a 503).

The functional tests cut a real server's connections; the errors a Galera
node that is not synced gives (1047), or a PostgreSQL that is shutting
down or starting up (57P01, 57P03), cannot be had on demand, so these are
the drivers' own exception objects, as the drivers build them.
"""

from oslo_db import exception as db_exc
import psycopg2
from psycopg2 import errors as pg_errors
import pymysql
import pytest
import sqlalchemy as sa

from cyborg_lite.db import errors as db_errors


def _wrapped(orig):
    return sa.exc.OperationalError("SELECT 1", {}, orig)


@pytest.mark.parametrize("code, message", [
    (2003, "Can't connect to MySQL server on '10.0.0.2'"),
    (2013, "Lost connection to MySQL server during query"),
    (2006, "MySQL server has gone away"),
    (1047, "WSREP has not yet prepared node for application use"),
    (1053, "Server shutdown in progress"),
])
def test_mysql_errors_of_a_server_gone(code, message):
    error = _wrapped(pymysql.err.OperationalError(code, message))
    assert db_errors.unreachable(error)


@pytest.mark.parametrize("code, message", [
    (1213, "Deadlock found when trying to get lock"),
    (1054, "Unknown column 'x' in 'field list'"),
    (1406, "Data too long for column 'name' at row 1"),
])
def test_other_mysql_errors_are_not(code, message):
    assert not db_errors.unreachable(
        _wrapped(pymysql.err.OperationalError(code, message)))


def test_libpq_connection_refused_has_no_sqlstate_and_is_gone():
    orig = psycopg2.OperationalError(
        'connection to server at "10.0.0.2", port 5432 failed: '
        'Connection refused')
    assert orig.pgcode is None
    assert db_errors.unreachable(_wrapped(orig))


@pytest.mark.parametrize("sqlstate, gone", [
    ("57P01", True),   # admin shutdown
    ("57P03", True),   # cannot connect now: starting up, recovering
    ("08006", True),   # connection failure
    ("40001", False),  # serialization failure: retried instead
    ("42703", False),  # undefined column
])
def test_postgresql_errors_by_sqlstate(sqlstate, gone):
    # NOTE(cyborg_lite): psycopg2 fills pgcode in only for what a server
    # sent; the subclass carries the SQLSTATE its class stands for.
    error_class = pg_errors.lookup(sqlstate)
    orig = type("FromServer", (error_class,), {"pgcode": sqlstate})("x")
    assert db_errors.unreachable(_wrapped(orig)) is gone


def test_oslo_db_connection_error_is_gone():
    assert db_errors.unreachable(db_exc.DBConnectionError(
        _wrapped(pymysql.err.OperationalError(2003, "refused"))))
    assert not db_errors.unreachable(db_exc.DBDeadlock())
    assert not db_errors.unreachable(ValueError("not a database error"))
