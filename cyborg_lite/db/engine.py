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

Filtering happens in SQL; writes of one request happen in one transaction,
retried on a deadlock or a serialization failure; state changes are
conditional updates. Works on sqlite, MariaDB/MySQL (pymysql) and
PostgreSQL (psycopg2).
"""

import contextlib
import functools
import os
import re
import time
import uuid as uuidlib

from oslo_log import log as logging
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy import exc as sa_exc
from sqlalchemy import orm

from cyborg_lite import exception
from cyborg_lite.db import migration

LOG = logging.getLogger(__name__)

# MySQL 1213 deadlock / 1205 lock wait timeout; PostgreSQL 40P01 deadlock /
# 40001 serialization failure; sqlite "database is locked".
_RETRYABLE_MYSQL = {1213, 1205}
_RETRYABLE_PG = {"40P01", "40001"}

#: execution option marking an engine whose transactions only read.
READ_ONLY = "cyborg_lite_read_only"


def _is_retryable(error):
    orig = getattr(error, "orig", None)
    args = getattr(orig, "args", ())
    if args and args[0] in _RETRYABLE_MYSQL:
        return True
    if getattr(orig, "pgcode", None) in _RETRYABLE_PG:
        return True
    return "database is locked" in str(orig)


def _make_engine(url, debug=False):
    url = sa.engine.make_url(url)
    kwargs = {"echo": debug, "future": True}
    if url.get_backend_name() == "sqlite":
        database = url.database
        if database and database != ":memory:":
            os.makedirs(os.path.dirname(os.path.abspath(database)),
                        exist_ok=True)
        kwargs["connect_args"] = {"check_same_thread": False, "timeout": 30}
        engine = sa.create_engine(url, **kwargs)

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
            cursor.execute("PRAGMA synchronous=NORMAL")
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

        return engine
    # NOTE(cyborg_lite): READ COMMITTED so a conditional UPDATE that waited
    # for another worker's row lock sees that worker's commit (and fails its
    # WHERE) instead of a stale snapshot or a serialization error.
    kwargs.update(pool_pre_ping=True, pool_recycle=3600,
                  isolation_level="READ COMMITTED")
    return sa.create_engine(url, **kwargs)


class Database:
    """A database handle: an engine, sessions and retried transactions.

    :param url: SQLAlchemy URL.
    :param debug: log SQL statements.
    :param retries: how often a deadlocked transaction is retried.
    """

    def __init__(self, url, debug=False, retries=5):
        self.url = url
        self.engine = _make_engine(url, debug)
        self.retries = retries
        self._sessionmaker = orm.sessionmaker(self.engine,
                                              expire_on_commit=False)
        self._reader = orm.sessionmaker(
            self.engine.execution_options(**{READ_ONLY: True}),
            expire_on_commit=False)

    @classmethod
    def from_conf(cls, conf):
        """The database named by ``[database] connection``."""
        return cls(conf.database.connection, conf.database.connection_debug,
                   conf.database.max_retries_on_deadlock)

    def sync(self):
        """Bring the schema to the newest migration."""
        migration.upgrade(self.engine)

    def dispose(self):
        """Close every pooled connection."""
        self.engine.dispose()

    @contextlib.contextmanager
    def transaction(self, read_only=False):
        """A session in one transaction: committed on success, rolled back
        on any error.

        :param read_only: the transaction only reads (on sqlite it then
            neither takes nor waits for the write lock).
        """
        session = (self._reader if read_only else self._sessionmaker)()
        try:
            with session.begin():
                yield session
        finally:
            session.close()

    def run(self, func, *args, **kwargs):
        """``func(session, *args, **kwargs)`` in one transaction, retried
        when the database reports a deadlock or a serialization failure."""
        return self._run(False, func, args, kwargs)

    def read(self, func, *args, **kwargs):
        """:meth:`run` for a ``func`` that only reads."""
        return self._run(True, func, args, kwargs)

    def _run(self, read_only, func, args, kwargs):
        delay = 0.01
        for attempt in range(self.retries + 1):
            try:
                with self.transaction(read_only) as session:
                    return func(session, *args, **kwargs)
            except sa_exc.DBAPIError as error:
                if attempt == self.retries or not _is_retryable(error):
                    raise
                LOG.debug("Retrying %s after %s", func.__name__, error)
                time.sleep(delay)
                delay = min(delay * 2, 0.5)


def _with_database(func, read_only):
    @functools.wraps(func)
    def wrapper(handle, *args, **kwargs):
        if isinstance(handle, Database):
            return handle._run(read_only, func, args, kwargs)
        return func(handle, *args, **kwargs)
    return wrapper


def transactional(func):
    """Make ``func(session, ...)`` callable as ``func(db, ...)`` too."""
    return _with_database(func, read_only=False)


def reader(func):
    """:func:`transactional` for a ``func`` that only reads: called with a
    :class:`Database` it runs in a read-only transaction."""
    return _with_database(func, read_only=True)


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
