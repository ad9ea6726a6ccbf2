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

oslo.db's ``enginefacade`` builds the engine of a MariaDB/MySQL or
PostgreSQL database from the ``[database]`` options every OpenStack
service reads (pool sizes, recycle time, ``mysql_sql_mode``,
``mysql_wsrep_sync_wait``...), as Placement's ``db_api`` does, and
translates the driver's errors into its own:
:class:`~oslo_db.exception.DBDeadlock` (retried here),
:class:`~oslo_db.exception.DBConnectionError` (the database is unreachable:
the API answers 503), :class:`~oslo_db.exception.DBDuplicateEntry` and
:class:`~oslo_db.exception.DBReferenceError` (a race lost to another
writer: the API answers 409). How each database is connected to is
:mod:`cyborg_lite.db.backends`'s business.

Filtering happens in SQL; writes of one request happen in one transaction,
retried on a deadlock or a serialization failure; state changes are
conditional updates. Works on sqlite, MariaDB/MySQL (pymysql) and
PostgreSQL (psycopg2).
"""

import contextlib
import functools

from oslo_db import api as oslo_db_api
from oslo_db.sqlalchemy import enginefacade
from oslo_log import log as logging
from sqlalchemy import orm

from cyborg_lite.db import backends
from cyborg_lite.db import errors
from cyborg_lite.db import migration

# NOTE(cyborg_lite): the names every table's module used from here before
# they had modules of their own.
from cyborg_lite.db.errors import unreachable as unreachable
from cyborg_lite.db.pagination import as_page as as_page
from cyborg_lite.db.pagination import INT64_MAX as INT64_MAX
from cyborg_lite.db.pagination import integer_id as integer_id
from cyborg_lite.db.pagination import is_uuid_like as is_uuid_like
from cyborg_lite.db.pagination import new_uuid as new_uuid
from cyborg_lite.db.pagination import Page as Page
from cyborg_lite.db.pagination import paginate as paginate

LOG = logging.getLogger(__name__)


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

# The [database] options enginefacade hands to oslo.db's create_engine.
_ENGINE_OPTIONS = (
    "connection_debug", "connection_trace", "connection_recycle_time",
    "max_pool_size", "max_overflow", "pool_timeout", "mysql_sql_mode",
    "mysql_wsrep_sync_wait", "max_retries", "retry_interval")

# NOTE(cyborg_lite): a deadlock between two short transactions clears in
# milliseconds; oslo.db's db_retry_interval counts whole seconds, so the
# first retry comes after 10 ms and the interval doubles (with jitter) up
# to db_max_retry_interval.
FIRST_RETRY_INTERVAL = 0.01


def transaction_context(url, options, autocommit=False):
    """An ``enginefacade`` transaction context for the MariaDB/MySQL or
    PostgreSQL database at ``url``, configured from ``options``.

    :param options: ``[database]`` option values by name.
    :param autocommit: its engine runs every statement as its own
        transaction.
    """
    context = enginefacade.transaction_context()
    context.configure(
        connection=url, slave_connection=None, synchronous_reader=True,
        connection_parameters=backends.connection_parameters(
            options["connection_parameters"], autocommit),
        # NOTE(cyborg_lite): no greenthreads to yield to on checkin.
        thread_checkin=False, expire_on_commit=False,
        **{name: options[name] for name in _ENGINE_OPTIONS})
    return context


class Database:
    """A database handle: an engine, sessions and retried transactions.

    :param url: SQLAlchemy URL.
    :param options: ``[database]`` option values by name (any subset of
        :data:`DEFAULTS`; the rest take those).
    """

    def __init__(self, url, options=None):
        self.url = url
        self.options = dict(DEFAULTS, **(options or {}))
        self.retries = self.options["db_max_retries"]
        if backends.backend_name(url) == "sqlite":
            self.engine = backends.sqlite_engine(url, self.options)
            self._sessionmaker = orm.sessionmaker(self.engine,
                                                  expire_on_commit=False)
            #: the bind of :meth:`autocommit` (None: there is none).
            self._autocommit = None
            self._reader = orm.sessionmaker(
                self.engine.execution_options(**{backends.READ_ONLY: True}),
                expire_on_commit=False)
            self._single = self._sessionmaker
        else:
            if not isinstance(url, str):
                url = url.render_as_string(hide_password=False)
            writer = transaction_context(url, self.options).writer
            self.engine = writer.get_engine()
            self._sessionmaker = writer.get_sessionmaker()
            # NOTE(cyborg_lite): reads and single-statement writes run in
            # autocommit, on a pool of their own: under READ COMMITTED
            # they lose nothing, and save the BEGIN (psycopg2) and COMMIT
            # round trips of a transaction. Switching a pooled connection
            # to autocommit and back would cost as much on every checkout
            # (PyMySQL's SET autocommit, SQLAlchemy's look at PostgreSQL's
            # isolation level): arq_cycle.py --round-trips counts 2/3/2
            # round trips per step on PostgreSQL that way, 1/2/1 here.
            autocommit = transaction_context(
                url, self.options, autocommit=True).writer
            self._autocommit = autocommit.get_engine()
            self._reader = self._single = autocommit.get_sessionmaker()
        self._retrying = oslo_db_api.wrap_db_retry(
            retry_interval=FIRST_RETRY_INTERVAL,
            max_retries=self.retries,
            inc_retry_interval=self.options["db_inc_retry_interval"],
            max_retry_interval=self.options["db_max_retry_interval"],
            retry_on_deadlock=True, exception_checker=errors.is_retryable,
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
        if self._autocommit is None:
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
