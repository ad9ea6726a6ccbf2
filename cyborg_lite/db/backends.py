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

"""What differs between sqlite, MariaDB/MySQL and PostgreSQL below the
transactions: how a connection is opened, set up, begun and reset.

oslo.db builds the engine of a MariaDB/MySQL or PostgreSQL database
(:func:`oslo_db.sqlalchemy.engines.create_engine`, through
``enginefacade``); the few settings it takes no argument for are given by
:class:`EnginePlugin`, an SQLAlchemy ``CreateEnginePlugin`` named in the
URL's query string, and the events it listens to. Everything here uses
public SQLAlchemy and oslo.db interfaces only.
"""

import logging as std_logging
import os
import time
from urllib import parse

from oslo_db.sqlalchemy import exc_filters
import sqlalchemy as sa
from sqlalchemy import dialects
from sqlalchemy import event

from cyborg_lite.db import errors

#: execution option marking an engine whose transactions only read
#: (sqlite: they begin DEFERRED).
READ_ONLY = "cyborg_lite_read_only"
#: a pooled connection unused for longer than this is pinged before use.
PING_AFTER_IDLE = 1.0

#: the name :class:`EnginePlugin` is registered under.
PLUGIN = "cyborg_lite"
# URL query parameter of the plugin: the engine runs in autocommit.
_AUTOCOMMIT = "cyborg_lite_autocommit"

_LAST_USED = "cyborg_lite_last_used"
_DIRTY = "cyborg_lite_dirty"

_SESSION_READ_COMMITTED = {
    "mysql": "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED",
    "postgresql": "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION "
                  "LEVEL READ COMMITTED",
}


def backend_name(url):
    """``"sqlite"``, ``"mysql"`` or ``"postgresql"``: the database behind
    the SQLAlchemy URL ``url``."""
    return sa.engine.make_url(url).get_backend_name()


def begin_read_only(connection):
    """Make the transaction ``connection`` has just begun read-only, where
    the database knows such transactions (not sqlite, whose connection the
    caller opens read-only instead)."""
    if connection.engine.dialect.name != "sqlite":
        connection.exec_driver_sql("SET TRANSACTION READ ONLY")


def connection_parameters(parameters, autocommit=False):
    """``[database] connection_parameters`` with :class:`EnginePlugin`
    named: the query string oslo.db appends to the database URL.

    :param autocommit: the engine runs every statement as its own
        transaction.
    """
    query = [("plugin", PLUGIN)]
    if autocommit:
        query.append((_AUTOCOMMIT, "1"))
    ours = parse.urlencode(query)
    return f"{parameters}&{ours}" if parameters else ours


class EnginePlugin(sa.engine.CreateEnginePlugin):
    """The pool and connection settings of a MariaDB/MySQL or PostgreSQL
    engine that oslo.db's ``create_engine`` takes no argument for.

    - Pre-ping off: a ping only of a connection that sat idle
      (:func:`_ping_when_idle`).
    - The pool hands out the connection returned last (LIFO).
    - Autocommit for the engine that asks (``cyborg_lite_autocommit=1``).
    - MariaDB/MySQL: no ``ROLLBACK`` on return after a ``COMMIT``
      (:func:`_reset_when_needed`).
    - Every server: READ COMMITTED, and the errors of a server gone are
      disconnects (:func:`~cyborg_lite.db.errors.mark_unreachable`).
    """

    def __init__(self, url, kwargs):
        super().__init__(url, kwargs)
        self.backend = url.get_backend_name()
        self.autocommit = url.query.get(_AUTOCOMMIT) == "1"

    def update_url(self, url):
        return url.difference_update_query([_AUTOCOMMIT])

    def handle_dialect_kwargs(self, dialect_cls, dialect_args):
        if self.autocommit:
            dialect_args.update(isolation_level="AUTOCOMMIT",
                                skip_autocommit_rollback=True)

    def handle_pool_kwargs(self, pool_cls, pool_args):
        # NOTE(cyborg_lite): oslo.db always asks for pre-ping, a round
        # trip before every checkout: an ARQ cycle's steps take 2/3/2
        # round trips with it, 1/2/1 without (arq_cycle.py --round-trips).
        pool_args["pre_ping"] = False
        if issubclass(pool_cls, sa.pool.QueuePool):
            # NOTE(cyborg_lite): a worker serving one request at a time
            # keeps reusing the same connection, which never idles long
            # enough to be pinged; those it needs only at peaks age out
            # (connection_recycle_time).
            pool_args["use_lifo"] = True
        if self.backend == "mysql" and not self.autocommit:
            pool_args["reset_on_return"] = None

    def engine_created(self, engine):
        event.listen(engine, "handle_error", errors.mark_unreachable,
                     insert=True)
        _read_committed(engine, self.autocommit)
        _ping_when_idle(engine)
        if self.backend == "mysql" and not self.autocommit:
            _reset_when_needed(engine)


# NOTE(cyborg_lite): registered in-process (the dialect registry's
# register()), so the plugin needs no entry point installed.
dialects.plugins.register(PLUGIN, __name__, "EnginePlugin")


def _read_committed(engine, autocommit):
    """READ COMMITTED on every connection, so a conditional UPDATE that
    waited for another worker's row lock sees that worker's commit (and
    fails its WHERE) instead of a stale snapshot or a serialization
    error."""
    statement = _SESSION_READ_COMMITTED[engine.dialect.name]

    @event.listens_for(engine, "connect")
    def _set(dbapi_connection, record):
        if autocommit:
            # NOTE(cyborg_lite): the dialect's way would switch autocommit
            # off; in autocommit, the session's default is what counts.
            cursor = dbapi_connection.cursor()
            cursor.execute(statement)
            cursor.close()
        else:
            engine.dialect.set_isolation_level(dbapi_connection,
                                               "READ COMMITTED")


def _ping_when_idle(engine):
    """Ping a pooled connection on checkout only when it sat idle.

    What pre-ping guards against (a server restarted, or a connection its
    wait_timeout closed, while the connection sat in the pool) happens to
    idle connections; a connection that served a request a moment ago is
    used as is, and should its server have gone in that moment, the
    request answers 503 and the pool is dropped, as for any lost
    connection. SQLAlchemy's documented pessimistic ping, on checkout.
    """
    @event.listens_for(engine, "connect")
    @event.listens_for(engine, "checkin")
    def _stamp(dbapi_connection, record):
        if record is not None:
            record.info[_LAST_USED] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _ping_if_idle(dbapi_connection, record, proxy):
        if time.monotonic() - record.info.get(_LAST_USED, 0) <= \
                PING_AFTER_IDLE:
            return
        try:
            engine.dialect.do_ping(dbapi_connection)
        except Exception as error:
            # NOTE(cyborg_lite): the pool retries with a new connection;
            # the others in the pool are as stale as this one.
            raise sa.exc.InvalidatePoolError(str(error)) from error


def _reset_when_needed(engine):
    """Roll a pooled connection back on its return only when it may hold
    an open transaction.

    SQLAlchemy rolls back every connection returned to the pool, also one
    whose transaction has just been committed; PyMySQL sends that
    ``ROLLBACK`` to the server: one round trip more per write transaction
    (the ARQ cycle's steps run in autocommit and need none). A connection
    is *clean* once its transaction ended by a ``COMMIT`` or ``ROLLBACK``
    that succeeded, and *dirty* from its next statement, or any error, on;
    a dirty one (or one never seen clean) is rolled back on its return.
    This is SQLAlchemy's documented custom reset: ``reset_on_return`` None
    (:class:`EnginePlugin`) and a ``reset`` event.
    """
    @event.listens_for(engine, "before_cursor_execute")
    def _dirty(connection, cursor, statement, parameters, context,
               executemany):
        connection.info[_DIRTY] = True

    @event.listens_for(engine, "handle_error")
    def _dirty_on_error(context):
        if context.connection is not None and not \
                context.connection.invalidated:
            context.connection.info[_DIRTY] = True

    @event.listens_for(engine, "commit")
    @event.listens_for(engine, "rollback")
    def _ending(connection):
        # NOTE(cyborg_lite): fires before the COMMIT or ROLLBACK is sent;
        # should it fail, handle_error marks the connection dirty again.
        # An invalidated connection is discarded, not reset.
        if not connection.invalidated:
            connection.info[_DIRTY] = False

    @event.listens_for(engine, "checkout")
    def _checked_out(dbapi_connection, record, proxy):
        # NOTE(cyborg_lite): what runs on the connection outside
        # SQLAlchemy's statements (a driver-level cursor) is not seen:
        # every checkout starts dirty until a transaction ends.
        record.info[_DIRTY] = True

    @event.listens_for(engine, "reset")
    def _reset(dbapi_connection, record, reset_state):
        if record is None or record.info.get(_DIRTY, True):
            dbapi_connection.rollback()
            if record is not None:
                record.info[_DIRTY] = False


def sqlite_engine(url, options):
    """The engine of the sqlite database at ``url``.

    :param options: ``[database]`` option values by name.
    """
    url = sa.engine.make_url(url)
    database = url.database
    if database and database != ":memory:":
        os.makedirs(os.path.dirname(os.path.abspath(database)),
                    exist_ok=True)
    # NOTE(cyborg_lite): not oslo.db's create_engine: it puts a sqlite file
    # on NullPool (a new connection and its PRAGMAs per transaction) and
    # begins DEFERRED; the bind path rests on pooled WAL connections and
    # BEGIN IMMEDIATE. oslo.db's exception translation is registered all
    # the same. Pool and MySQL options do not apply to sqlite.
    engine = sa.create_engine(
        url, connect_args={"check_same_thread": False, "timeout": 30})
    synchronous = "NORMAL" if options["sqlite_synchronous"] else "OFF"

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, record):
        # NOTE(cyborg_lite): let SQLAlchemy, not pysqlite, emit BEGIN so
        # that it can be BEGIN IMMEDIATE: a write transaction then takes
        # the lock up front instead of failing on lock upgrade.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA journal_mode=WAL")
        # NOTE(cyborg_lite): with WAL, NORMAL still never corrupts the
        # database; it only skips an fsync per commit (a power cut may
        # lose the last commits), which halves the latency of a bind.
        # sqlite_synchronous = false skips the fsyncs of checkpoints too.
        cursor.execute("PRAGMA synchronous=%s" % synchronous)
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection):
        # NOTE(cyborg_lite): a read-only transaction begins DEFERRED: in
        # WAL mode it reads a snapshot and never waits for (or holds up)
        # the one writer.
        if connection.get_execution_options().get(READ_ONLY):
            connection.exec_driver_sql("BEGIN")
        else:
            connection.exec_driver_sql("BEGIN IMMEDIATE")

    event.listen(engine, "handle_error", errors.mark_unreachable)
    exc_filters.register_engine(engine)
    _sql_logging(options["connection_debug"])
    return engine


def _sql_logging(connection_debug):
    # oslo.db's meaning of connection_debug: 100 logs every statement, 50
    # and up their summary.
    level = (std_logging.DEBUG if connection_debug >= 100 else
             std_logging.INFO if connection_debug >= 50 else
             std_logging.WARNING)
    std_logging.getLogger("sqlalchemy.engine").setLevel(level)
