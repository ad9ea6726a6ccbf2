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


"""The engine and its transactions; the queries live in one module per
table beside this one.

oslo.db builds the engine from the ``[database]`` options every OpenStack
service reads (pool sizes, recycle time, ``mysql_sql_mode``,
``mysql_wsrep_sync_wait``...) and translates the driver's errors into its
own: :class:`~oslo_db.exception.DBDeadlock` (retried here),
:class:`~oslo_db.exception.DBConnectionError` (the database is unreachable:
the API answers 503), :class:`~oslo_db.exception.DBDuplicateEntry` and
:class:`~oslo_db.exception.DBReferenceError` (a race lost to another
writer: the API answers 409).

Filtering happens in SQL; writes of one request happen in one transaction,
retried on a deadlock or a serialization failure; state changes are
conditional updates. Works on sqlite, MariaDB/MySQL (pymysql) and
PostgreSQL (psycopg2).
"""

import contextlib
import functools
import logging as std_logging
import os
import re
import time
import uuid as uuidlib

from oslo_db import api as oslo_db_api
from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import engines
from oslo_db.sqlalchemy import exc_filters
from oslo_log import log as logging
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy import orm

from cyborg_lite import exception
from cyborg_lite.db import migration

LOG = logging.getLogger(__name__)

#: execution option marking an engine whose transactions only read.
READ_ONLY = "cyborg_lite_read_only"

# How a unit of work runs: one transaction; reads only; at most one
# statement that writes (see Database.autocommit).
_WRITE, _READ, _SINGLE = "write", "read", "single"

#: ``[database]`` values used when a :class:`Database` is built from a URL
#: alone (tests, tools): oslo.db's defaults, without its connect-at-start
#: retries.
DEFAULTS = {
    "connection_debug": 0, "connection_trace": False,
    "connection_recycle_time": 3600, "connection_parameters": "",
    "max_pool_size": 5, "max_overflow": 50, "pool_timeout": None,
    "mysql_sql_mode": "TRADITIONAL", "mysql_wsrep_sync_wait": None,
    "max_retries": 0, "retry_interval": 10,
    "db_max_retries": 5, "db_max_retry_interval": 10,
    "db_inc_retry_interval": True, "sqlite_synchronous": True,
}

# NOTE(cyborg_lite): a deadlock between two short transactions clears in
# milliseconds; oslo.db's db_retry_interval counts whole seconds, so the
# first retry comes after 10 ms and the interval doubles (with jitter) up
# to db_max_retry_interval.
FIRST_RETRY_INTERVAL = 0.01

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
    after a pool pre-ping reaches the caller as SQLAlchemy raised it.
    """
    if isinstance(error, db_exc.DBConnectionError):
        return True
    if isinstance(error, sa.exc.DBAPIError):
        return error.connection_invalidated or _server_gone(error.orig)
    return False


def _mark_unreachable(context):
    # NOTE(cyborg_lite): runs before oslo.db's translation, which turns a
    # disconnect into DBConnectionError and makes SQLAlchemy drop the
    # pooled connections; libpq's "Connection refused" and MariaDB's 1047
    # are not disconnects to the drivers' own tables.
    if not context.is_disconnect and _server_gone(
            context.original_exception):
        context.is_disconnect = True


def _is_retryable(error):
    """Whether ``error`` ends a transaction another attempt may pass."""
    if isinstance(error, db_exc.DBDeadlock):
        return True
    orig = getattr(getattr(error, "inner_exception", None), "orig", None)
    if orig is None:
        orig = getattr(error, "orig", None)
    if getattr(orig, "pgcode", None) in _PG_RETRYABLE:
        return True
    return "database is locked" in str(orig)


def _sqlite_engine(url, options):
    database = url.database
    if database and database != ":memory:":
        os.makedirs(os.path.dirname(os.path.abspath(database)),
                    exist_ok=True)
    # NOTE(cyborg_lite): not oslo.db's create_engine: it puts a sqlite file
    # on NullPool (a new connection and its PRAGMAs per transaction) and
    # begins DEFERRED; the bind path rests on pooled WAL connections and
    # BEGIN IMMEDIATE. oslo.db's exception translation is registered below
    # all the same. Pool and MySQL options do not apply to sqlite.
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

    _sql_logging(options["connection_debug"])
    return engine


def _sql_logging(connection_debug):
    # oslo.db's meaning of connection_debug: 100 logs every statement, 50
    # and up their summary.
    level = (std_logging.DEBUG if connection_debug >= 100 else
             std_logging.INFO if connection_debug >= 50 else
             std_logging.WARNING)
    std_logging.getLogger("sqlalchemy.engine").setLevel(level)


_SESSION_READ_COMMITTED = {
    "mysql": "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED",
    "postgresql": "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION "
                  "LEVEL READ COMMITTED",
}


def _engine_target(autocommit):
    """What oslo.db's create_engine hands its engine arguments to (it
    takes no others)."""
    # NOTE(cyborg_lite): the pool hands out the connection returned last
    # (LIFO): a worker serving one request at a time keeps reusing the
    # same connection, which never idles long enough to be pinged, while
    # those it needs only at peaks age out (connection_recycle_time).
    extra = {"pool_use_lifo": True}
    if autocommit:
        extra.update(isolation_level="AUTOCOMMIT",
                     skip_autocommit_rollback=True)

    def target(url, **engine_args):
        engine = sa.create_engine(url, **extra, **engine_args)
        return engine, engine
    return target


def _server_engine(url, options, autocommit=False):
    engine = engines.create_engine(
        url.render_as_string(hide_password=False),
        mysql_sql_mode=options["mysql_sql_mode"],
        mysql_wsrep_sync_wait=options["mysql_wsrep_sync_wait"],
        connection_recycle_time=options["connection_recycle_time"],
        connection_debug=options["connection_debug"],
        connection_trace=options["connection_trace"],
        connection_parameters=options["connection_parameters"],
        max_pool_size=options["max_pool_size"],
        max_overflow=options["max_overflow"],
        pool_timeout=options["pool_timeout"],
        max_retries=options["max_retries"],
        retry_interval=options["retry_interval"],
        thread_checkin=False, _engine_target=_engine_target(autocommit))

    postgresql = engine.dialect.name == "postgresql"

    @event.listens_for(engine, "connect")
    def _read_committed(dbapi_connection, record):
        # NOTE(cyborg_lite): READ COMMITTED so a conditional UPDATE that
        # waited for another worker's row lock sees that worker's commit
        # (and fails its WHERE) instead of a stale snapshot or a
        # serialization error.
        if autocommit or postgresql:
            if postgresql:
                dbapi_connection.autocommit = True
            # NOTE(cyborg_lite): the dialect's way would switch autocommit
            # off; in autocommit, the session's default is what counts.
            cursor = dbapi_connection.cursor()
            cursor.execute(_SESSION_READ_COMMITTED[engine.dialect.name])
            cursor.close()
        else:
            engine.dialect.set_isolation_level(dbapi_connection,
                                               "READ COMMITTED")

    _ping_when_idle(engine)
    if engine.dialect.name == "mysql" and not autocommit:
        _reset_when_needed(engine)
    if postgresql:
        _begin_with_first_statement(engine)
    # NOTE(cyborg_lite): create_engine may have opened a connection (its
    # connect-at-start check) before the listeners above existed.
    engine.dispose()
    return engine


#: a pooled connection unused for longer than this is pinged before use.
PING_AFTER_IDLE = 1.0
_LAST_USED = "cyborg_lite_last_used"


def _ping_when_idle(engine):
    """Ping a pooled connection on checkout only when it sat idle.

    oslo.db turns SQLAlchemy's pre-ping on: a round trip before every
    transaction, a fifth of those of an ARQ cycle. What it guards against
    (a server restarted, or a connection its wait_timeout closed, while the
    connection sat in the pool) happens to idle connections; a connection
    that served a request a moment ago is used as is, and should its server
    have gone in that moment, the request answers 503 and the pool is
    dropped, as for any lost connection.
    """
    # NOTE(cyborg_lite): no public switch: oslo.db's create_engine always
    # passes pool_pre_ping=True.
    engine.pool._pre_ping = False

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


_DIRTY = "cyborg_lite_dirty"


def _reset_when_needed(engine):
    """Roll a pooled connection back on its return only when it may hold
    an open transaction.

    SQLAlchemy rolls back every connection returned to the pool, also one
    whose transaction has just been committed; PyMySQL sends that
    ``ROLLBACK`` to the server (psycopg2 knows it has nothing to roll back
    and does not): one round trip more per transaction, a fifth of those
    of an ARQ cycle. A connection is *clean* once its transaction ended
    by a ``COMMIT`` or ``ROLLBACK`` that succeeded, and *dirty* from its
    next statement, or any error, on; a dirty one (or one never seen
    clean) is rolled back on its return, as before. This is SQLAlchemy's
    documented scheme for a custom reset (``pool_reset_on_return=None``
    and a ``reset`` event), which oslo.db's create_engine does not expose.
    """
    engine.pool._reset_on_return = sa.pool.base.reset_none

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

    @event.listens_for(engine.pool, "checkout")
    def _checked_out(dbapi_connection, record, proxy):
        # NOTE(cyborg_lite): what runs on the connection outside
        # SQLAlchemy's statements (a driver-level cursor) is not seen:
        # every checkout starts dirty until a transaction ends.
        record.info[_DIRTY] = True

    @event.listens_for(engine.pool, "reset")
    def _reset(dbapi_connection, record, reset_state):
        if record is None or record.info.get(_DIRTY, True):
            dbapi_connection.rollback()
            if record is not None:
                record.info[_DIRTY] = False


#: execution option: the transactions of this engine send no ``BEGIN``,
#: each statement commits on its own (PostgreSQL).
NO_BEGIN = "cyborg_lite_no_begin"
_BEGIN = "cyborg_lite_begin"
_IN_TRANSACTION = "cyborg_lite_in_transaction"


def _begin_with_first_statement(engine):
    """Send a PostgreSQL transaction's ``BEGIN`` with its first statement.

    psycopg2 sends the ``BEGIN`` of a transaction on its own, a round trip
    before the first statement. Here its connections stay in autocommit
    and each transaction's first statement goes as ``BEGIN; <statement>``
    in one message (the simple query protocol runs both and answers the
    last); ``COMMIT`` and ``ROLLBACK`` are sent when a ``BEGIN`` was.
    A connection with the :data:`NO_BEGIN` execution option runs its
    statements in autocommit (:meth:`Database.autocommit`): one pool
    serves both.
    """
    @event.listens_for(engine, "begin")
    def _begin(connection):
        if not connection.get_execution_options().get(NO_BEGIN):
            connection.info[_BEGIN] = True

    @event.listens_for(engine, "before_cursor_execute", retval=True)
    def _with_begin(connection, cursor, statement, parameters, context,
                    executemany):
        info = connection.info
        if info.pop(_BEGIN, False):
            info[_IN_TRANSACTION] = True
            if executemany:
                # NOTE(cyborg_lite): the statement would be sent once per
                # row: BEGIN on its own.
                cursor.execute("BEGIN")
            else:
                statement = "BEGIN; " + statement
        return statement, parameters

    def _ending(verb, driver_method):
        def end(dbapi_connection):
            try:
                info = dbapi_connection.info
            except NotImplementedError:
                info = None  # NOTE(cyborg_lite): SQLAlchemy's ad hoc proxy
            if not (dbapi_connection.autocommit and isinstance(info, dict)):
                # NOTE(cyborg_lite): SQLAlchemy's first look at a new
                # connection, before it is put in autocommit.
                return driver_method(dbapi_connection)
            info.pop(_BEGIN, None)
            if info.pop(_IN_TRANSACTION, False):
                cursor = dbapi_connection.cursor()
                try:
                    cursor.execute(verb)
                finally:
                    cursor.close()
        return end

    # NOTE(cyborg_lite): the dialect's own methods, so that a failed
    # COMMIT or ROLLBACK goes through SQLAlchemy's error handling (a lost
    # server invalidates the pool) as psycopg2's own would.
    dialect = engine.dialect
    dialect.do_commit = _ending("COMMIT", dialect.do_commit)
    dialect.do_rollback = _ending("ROLLBACK", dialect.do_rollback)

    @event.listens_for(engine, "connect")
    def _fresh(dbapi_connection, record):
        record.info.pop(_BEGIN, None)
        record.info.pop(_IN_TRANSACTION, None)


def _make_engine(url, options, autocommit=False):
    url = sa.engine.make_url(url)
    if url.get_backend_name() == "sqlite":
        engine = _sqlite_engine(url, options)
        exc_filters.register_engine(engine)
    else:
        engine = _server_engine(url, options, autocommit)
    # NOTE(cyborg_lite): inserted first, to run before oslo.db's filters.
    event.listen(engine, "handle_error", _mark_unreachable, insert=True)
    return engine


def _autocommit_engine(engine, url, options):
    """The engine that runs each statement as its own transaction, or None
    (sqlite).

    Under READ COMMITTED every statement reads its own snapshot anyway, so
    reads lose nothing in autocommit, nor does a unit of work whose only
    write is one statement; both save the ``COMMIT`` round trip of a
    transaction. On PostgreSQL, every connection is in autocommit
    (:func:`_begin_with_first_statement`): the same pool serves. On
    MySQL, the connections of a transaction must not be, and switching
    one costs PyMySQL a round trip each way (``SET autocommit``), which
    SQLAlchemy would spend on every return to the pool: autocommit gets
    a pool of its own, whose connections stay in it and whose
    ``ROLLBACK`` on return is skipped.
    """
    if engine.dialect.name == "postgresql":
        return engine.execution_options(**{NO_BEGIN: True})
    if engine.dialect.name == "mysql":
        return _make_engine(url, options, autocommit=True)
    return None


class Database:
    """A database handle: an engine, sessions and retried transactions.

    :param url: SQLAlchemy URL.
    :param options: ``[database]`` option values by name (any subset of
        :data:`DEFAULTS`; the rest take those).
    """

    def __init__(self, url, options=None):
        self.url = url
        self.options = dict(DEFAULTS, **(options or {}))
        self.engine = _make_engine(url, self.options)
        self.retries = self.options["db_max_retries"]
        self._sessionmaker = orm.sessionmaker(self.engine,
                                              expire_on_commit=False)
        #: the bind of :meth:`autocommit` (None: there is none, sqlite).
        self._autocommit = _autocommit_engine(self.engine, url,
                                              self.options)
        if self._autocommit is None:
            self._reader = orm.sessionmaker(
                self.engine.execution_options(**{READ_ONLY: True}),
                expire_on_commit=False)
            self._single = self._sessionmaker
        else:
            self._reader = self._single = orm.sessionmaker(
                self._autocommit, expire_on_commit=False)
        self._retrying = oslo_db_api.wrap_db_retry(
            retry_interval=FIRST_RETRY_INTERVAL,
            max_retries=self.retries,
            inc_retry_interval=self.options["db_inc_retry_interval"],
            max_retry_interval=self.options["db_max_retry_interval"],
            retry_on_deadlock=True, exception_checker=_is_retryable,
            jitter=True)(self._once)

    @classmethod
    def from_conf(cls, conf, wait_for_database=True):
        """The database named by ``[database] connection``, with the
        other ``[database]`` options oslo.db defines.

        :param wait_for_database: connect now, retrying as ``[database]
            max_retries`` and ``retry_interval`` say (oslo.db's start-up
            check); False: connect at the first statement, whose failure
            the caller answers (an API worker answers 503).
        """
        group = conf.database
        options = {name: group[name] for name in DEFAULTS}
        if not wait_for_database:
            options["max_retries"] = 0
        return cls(group.connection, options)

    def sync(self):
        """Bring the schema to the newest migration."""
        migration.upgrade(self.engine)

    def dispose(self):
        """Close every pooled connection."""
        for engine in self.engines:
            engine.dispose()

    @contextlib.contextmanager
    def transaction(self, read_only=False):
        """A session in one transaction: committed on success, rolled back
        on any error.

        :param read_only: the transaction only reads (on sqlite it then
            neither takes nor waits for the write lock; on MariaDB and
            PostgreSQL each statement runs in autocommit).
        """
        with self._session(_READ if read_only else _WRITE) as session:
            yield session

    @contextlib.contextmanager
    def _session(self, mode):
        if mode != _WRITE and self._autocommit is not None:
            session = self._single()
            try:
                yield session
                session.flush()
            finally:
                # NOTE(cyborg_lite): each statement committed as it ran;
                # the rollback of the close is skipped.
                session.close()
            return
        session = (self._reader if mode == _READ else self._sessionmaker)()
        try:
            with session.begin():
                yield session
        finally:
            session.close()

    def run(self, func, *args, **kwargs):
        """``func(session, *args, **kwargs)`` in one transaction, retried
        when the database reports a deadlock or a serialization failure."""
        return self._retrying(_WRITE, func, args, kwargs)

    def read(self, func, *args, **kwargs):
        """:meth:`run` for a ``func`` that only reads (and takes no
        lock)."""
        return self._retrying(_READ, func, args, kwargs)

    def autocommit(self, func, *args, **kwargs):
        """:meth:`run` for a ``func`` that writes in one statement at most
        and takes no lock: every statement is its own transaction, which
        spares a ``BEGIN`` and a ``COMMIT`` round trip on MariaDB and
        PostgreSQL (on sqlite, one transaction as :meth:`run`)."""
        return self._retrying(_SINGLE, func, args, kwargs)

    @property
    def engines(self):
        """Every engine this handle runs statements on (to listen to their
        events): :attr:`engine`, and the one of :meth:`autocommit` and
        :meth:`read` where they have their own."""
        if self._autocommit is None or (
                self._autocommit.pool is self.engine.pool):
            return (self.engine,)
        return (self.engine, self._autocommit)

    def _once(self, mode, func, args, kwargs):
        with self._session(mode) as session:
            return func(session, *args, **kwargs)


def _with_database(func, mode):
    @functools.wraps(func)
    def wrapper(handle, *args, **kwargs):
        if isinstance(handle, Database):
            return handle._retrying(mode, func, args, kwargs)
        return func(handle, *args, **kwargs)
    return wrapper


def transactional(func):
    """Make ``func(session, ...)`` callable as ``func(db, ...)`` too."""
    return _with_database(func, _WRITE)


def reader(func):
    """:func:`transactional` for a ``func`` that only reads: called with a
    :class:`Database` it runs as :meth:`Database.read` does."""
    return _with_database(func, _READ)


def single_write(func):
    """:func:`transactional` for a ``func`` that writes in one statement at
    most and takes no lock: called with a :class:`Database` it runs as
    :meth:`Database.autocommit` does."""
    return _with_database(func, _SINGLE)


def new_uuid():
    """A new random uuid as a string."""
    return str(uuidlib.uuid4())


def is_uuid_like(value):
    """True when ``value`` is a UUID string (with or without dashes)."""
    try:
        uuidlib.UUID(str(value))
    except ValueError:
        return False
    return True


INT64_MAX = 2 ** 63 - 1
_ASCII_DIGITS = re.compile(r"[0-9]+")


def integer_id(value):
    """``value`` as a 64-bit integer id, or None when it is not one: an int
    or a string of ASCII digits, from 0 to 2**63-1 (``"²"`` is a digit to
    ``str.isdigit()`` but not to ``int()``)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 <= value <= INT64_MAX else None
    if isinstance(value, str) and _ASCII_DIGITS.fullmatch(value):
        number = int(value)
        return number if number <= INT64_MAX else None
    return None


class Page(list):
    """One page of a list: the rows, and the marker of the next page when
    there may be more (None on the last page)."""

    next_marker = None


def paginate(session, stmt, model, limit, marker):
    """``stmt`` ordered by id, after ``marker`` (a uuid), at most ``limit``
    rows, as a :class:`Page`.

    The marker is looked up through ``stmt`` itself, so a uuid the caller's
    filters (its project) hide is exactly as unknown as one that exists
    nowhere.

    :raises InvalidParameter: no row ``stmt`` selects has the uuid
        ``marker``.
    """
    if marker is not None:
        marker_id = session.execute(
            stmt.with_only_columns(model.id).where(model.uuid == marker)
        ).scalar_one_or_none()
        if marker_id is None:
            raise exception.InvalidParameter(
                name="marker", reason=f"no item with uuid {marker}")
        stmt = stmt.where(model.id > marker_id)
    stmt = stmt.order_by(model.id)
    if limit is not None:
        stmt = stmt.limit(limit + 1)
    return as_page(session.execute(stmt).scalars(), limit)


def as_page(rows, limit):
    """A :class:`Page` of ``rows``, read with a limit of ``limit + 1`` (or
    none): the extra row only says that there is a next page."""
    page = Page(rows)
    if limit is not None and len(page) > limit:
        del page[limit:]
        page.next_marker = page[-1].uuid
    return page
