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

"""What a database error means: the database cannot be used now (the API
answers 503), or the transaction may pass if tried again (a deadlock, a
serialization failure).

oslo.db translates the drivers' errors into its own
(:class:`~oslo_db.exception.DBConnectionError`,
:class:`~oslo_db.exception.DBDeadlock`...); the codes below are those it
does not know for what they are.
"""

from oslo_db import exception as db_exc
import sqlalchemy as sa

# MySQL/MariaDB errors meaning "no usable server here": 2002/2003 can't
# connect, 2006 gone away, 2013 lost connection, 1047 WSREP has not yet
# prepared node, 1053 server shutdown in progress, 1927 connection killed.
_MYSQL_UNREACHABLE = {1047, 1053, 1927, 2002, 2003, 2006, 2013}
# PostgreSQL: class 08 (connection exception), 57P01 admin shutdown, 57P02
# crash shutdown, 57P03 cannot connect now (starting up, recovering).
_PG_UNREACHABLE = {"57P01", "57P02", "57P03"}
# PostgreSQL 40001 (serialization failure) is retried like a deadlock;
# oslo.db names only 40P01 one. sqlite: another process held the write
# lock past busy_timeout.
_PG_RETRYABLE = {"40001", "40P01"}

_NO_PGCODE = object()


def _server_gone(orig):
    """Whether the driver's error ``orig`` says the server cannot be used
    (pymysql errors carry the MySQL code first, psycopg2 ones a pgcode)."""
    code = getattr(orig, "pgcode", _NO_PGCODE)
    if code is _NO_PGCODE:
        args = getattr(orig, "args", ())
        return bool(args) and args[0] in _MYSQL_UNREACHABLE
    if code is None:
        # NOTE(cyborg_lite): libpq reports a refused or dropped connection
        # as an OperationalError without an SQLSTATE.
        return any(cls.__name__ == "OperationalError"
                   for cls in type(orig).__mro__)
    return code in _PG_UNREACHABLE or code.startswith("08")


def unreachable(error):
    """Whether ``error``, raised by a database call, says the database
    cannot be used now (down, restarting, a Galera node not synced): the
    request may be retried later.

    oslo.db translates most such errors into
    :class:`~oslo_db.exception.DBConnectionError`; a failed reconnection
    after a ping of an idle connection reaches the caller as SQLAlchemy
    raised it.
    """
    if isinstance(error, db_exc.DBConnectionError):
        return True
    if isinstance(error, sa.exc.DBAPIError):
        return error.connection_invalidated or _server_gone(error.orig)
    return False


def mark_unreachable(context):
    """``handle_error`` listener: a server gone is a disconnect.

    Listened to before oslo.db's exception filters, which turn a
    disconnect into :class:`~oslo_db.exception.DBConnectionError` and make
    SQLAlchemy drop the pooled connections.
    """
    # NOTE(cyborg_lite): libpq's "Connection refused" and MariaDB's 1047
    # are not disconnects to the drivers' own tables.
    if not context.is_disconnect and _server_gone(
            context.original_exception):
        context.is_disconnect = True


def is_retryable(error):
    """Whether ``error`` ends a transaction another attempt may pass."""
    if isinstance(error, db_exc.DBDeadlock):
        return True
    orig = getattr(getattr(error, "inner_exception", None), "orig", None)
    if orig is None:
        orig = getattr(error, "orig", None)
    if getattr(orig, "pgcode", None) in _PG_RETRYABLE:
        return True
    return "database is locked" in str(orig)
