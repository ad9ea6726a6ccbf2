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


"""The one data-access module: engines, transactions and every query.

Filtering happens in SQL; writes of one request happen in one transaction;
state changes are conditional updates (see :mod:`cyborg_lite.arq_states`).
Works on sqlite, MariaDB/MySQL (pymysql) and PostgreSQL (psycopg2).
"""

import contextlib
import datetime
import functools
import logging
import os
import time
import uuid as uuidlib

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy import exc as sa_exc
from sqlalchemy import orm

from cyborg_lite.db import migration
from cyborg_lite.db import models
from cyborg_lite import exception

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


def _paginate(session, stmt, model, limit, marker):
    if marker is not None:
        marker_id = session.execute(
            sa.select(model.id).where(model.uuid == marker)
        ).scalar_one_or_none()
        if marker_id is None:
            raise exception.InvalidParameter(
                name="marker", reason=f"no item with uuid {marker}")
        stmt = stmt.where(model.id > marker_id)
    stmt = stmt.order_by(model.id)
    if limit is not None:
        stmt = stmt.limit(limit)
    return list(session.execute(stmt).scalars())


# Device profiles

@transactional
def device_profile_create(session, name, groups, description=None,
                          uuid=None):
    """Store a device profile; :raises DeviceProfileExists: on a duplicate
    name (or uuid)."""
    exists = session.execute(
        sa.select(models.DeviceProfile.id).where(
            models.DeviceProfile.name == name)).first()
    if exists:
        raise exception.DeviceProfileExists(name=name)
    profile = models.DeviceProfile(uuid=uuid or new_uuid(), name=name,
                                   groups=groups, description=description)
    session.add(profile)
    try:
        session.flush()
    except sa_exc.IntegrityError:
        raise exception.DeviceProfileExists(name=name)
    return profile


@reader
def device_profile_list(session, names=None, limit=None, marker=None):
    """Device profiles, optionally only those named in ``names``."""
    stmt = sa.select(models.DeviceProfile)
    if names is not None:
        stmt = stmt.where(models.DeviceProfile.name.in_(names))
    return _paginate(session, stmt, models.DeviceProfile, limit, marker)


@reader
def device_profile_get(session, ident):
    """A device profile by uuid or by name.

    :raises DeviceProfileNotFound:
    """
    column = (models.DeviceProfile.uuid if is_uuid_like(ident)
              else models.DeviceProfile.name)
    profile = session.execute(
        sa.select(models.DeviceProfile).where(column == ident)
    ).scalar_one_or_none()
    if profile is None and column is models.DeviceProfile.uuid:
        profile = session.execute(
            sa.select(models.DeviceProfile).where(
                models.DeviceProfile.name == ident)).scalar_one_or_none()
    if profile is None:
        raise exception.DeviceProfileNotFound(name=ident)
    return profile


@transactional
def device_profile_delete(session, idents):
    """Delete device profiles by uuid or name, all or none.

    :raises DeviceProfileNotFound: naming the first unknown one.
    :raises DeviceProfileInUse: when accelerator requests still use one.
    """
    profiles = [device_profile_get(session, ident) for ident in idents]
    for profile in profiles:
        count = session.execute(
            sa.select(sa.func.count(models.ARQ.id)).where(
                models.ARQ.device_profile_id == profile.id)).scalar_one()
        if count:
            raise exception.DeviceProfileInUse(name=profile.name,
                                               count=count)
        session.delete(profile)


# Accelerator requests

@transactional
def arq_create_many(session, profile_ident, project_id, specs):
    """Create ARQs for ``specs``: a list of ``device_profile_group_id``.

    :returns: the new ARQ rows.
    """
    return _add_arqs(session, device_profile_get(session, profile_ident),
                     project_id, specs)


def _add_arqs(session, profile, project_id, specs):
    arqs = [models.ARQ(uuid=new_uuid(), state="Initial",
                       device_profile_id=profile.id,
                       device_profile_name=profile.name,
                       device_profile_group_id=group_id,
                       project_id=project_id)
            for group_id in specs]
    session.add_all(arqs)
    session.flush()
    return arqs


@transactional
def arq_create_from_profile(session, profile_ident, project_id, amount):
    """Create the ARQs a device profile asks for, in one transaction.

    :param amount: ``amount(group) -> int``, how many ARQs a group needs.
    :raises DeviceProfileNotFound:
    :returns: the new ARQ rows.
    """
    profile = device_profile_get(session, profile_ident)
    specs = [index for index, group in enumerate(profile.groups)
             for _ in range(amount(group))]
    return _add_arqs(session, profile, project_id, specs)


def _arq_scope(stmt, project_id):
    if project_id is not None:
        stmt = stmt.where(models.ARQ.project_id == project_id)
    return stmt


@reader
def arq_list(session, project_id=None, instance_uuid=None, uuids=None,
             limit=None, marker=None):
    """ARQs filtered in SQL. ``project_id`` None means every project."""
    stmt = _arq_scope(sa.select(models.ARQ), project_id)
    if instance_uuid is not None:
        stmt = stmt.where(models.ARQ.instance_uuid == instance_uuid)
    if uuids is not None:
        stmt = stmt.where(models.ARQ.uuid.in_(uuids))
    return _paginate(session, stmt, models.ARQ, limit, marker)


def arqs_with_groups(session, uuids, project_id=None):
    """``[(arq, group)]`` of ARQs by uuid, each with its device profile
    group (the dict of the profile's ``groups`` the ARQ was made for)."""
    rows = session.execute(
        _arq_scope(sa.select(models.ARQ, models.DeviceProfile.groups)
                   .join(models.DeviceProfile,
                         models.ARQ.device_profile_id
                         == models.DeviceProfile.id), project_id)
        .where(models.ARQ.uuid.in_(uuids)))
    return [(arq, groups[arq.device_profile_group_id])
            for arq, groups in rows]


@reader
def arq_get(session, arq_uuid, project_id=None):
    """One ARQ; :raises ARQNotFound: also for another project's ARQ."""
    arq = session.execute(
        _arq_scope(sa.select(models.ARQ), project_id).where(
            models.ARQ.uuid == arq_uuid)).scalar_one_or_none()
    if arq is None:
        raise exception.ARQNotFound(uuids=arq_uuid)
    return arq


def arq_handles(session, arq_ids):
    """{arq id: (attach handle, deployable)} for the ARQs holding one."""
    if not arq_ids:
        return {}
    rows = session.execute(
        sa.select(models.AttachHandle, models.Deployable)
        .join(models.Deployable,
              models.AttachHandle.deployable_id == models.Deployable.id)
        .where(models.AttachHandle.arq_id.in_(arq_ids)))
    return {handle.arq_id: (handle, deployable)
            for handle, deployable in rows}


def arq_delete_rows(session, arq_ids):
    """Delete ARQ rows (their handles must be released first)."""
    if arq_ids:
        session.execute(sa.delete(models.ARQ)
                        .where(models.ARQ.id.in_(arq_ids))
                        .execution_options(synchronize_session=False))


def other_bound_arqs(session, instance_uuid, exclude_ids):
    """ARQs of ``instance_uuid`` in a bound-ish state, not in the PATCH."""
    stmt = sa.select(models.ARQ).where(
        models.ARQ.instance_uuid == instance_uuid,
        models.ARQ.state.in_(("BindStarted", "Bound")))
    if exclude_ids:
        stmt = stmt.where(models.ARQ.id.not_in(exclude_ids))
    return list(session.execute(stmt).scalars())


# Attach handles

def deployable_by_rp(session, rp_uuid):
    """The live deployable whose resource provider is ``rp_uuid``."""
    return deployable_and_device_by_rp(session, rp_uuid)[0]


def deployable_and_device_by_rp(session, rp_uuid):
    """``(deployable, device)`` of the live deployable whose resource
    provider is ``rp_uuid``, in one query, or ``(None, None)``."""
    row = session.execute(
        sa.select(models.Deployable, models.Device)
        .join(models.Device,
              models.Deployable.device_id == models.Device.id)
        .where(models.Deployable.rp_uuid == rp_uuid,
               models.Deployable.retired.is_(False))).one_or_none()
    return tuple(row) if row else (None, None)


def take_free_handle(session, deployable_id, arq_id, attempts=8):
    """Reserve one free attach handle of a deployable for an ARQ.

    Each try is one conditional ``UPDATE ... WHERE id = :id AND in_use =
    false``: when two workers pick the same handle only one update matches,
    the other moves on to the next candidate.

    :returns: the id of the handle taken, or None when none is free.
    """
    candidates = session.execute(
        sa.select(models.AttachHandle.id)
        .where(models.AttachHandle.deployable_id == deployable_id,
               models.AttachHandle.in_use.is_(False),
               models.AttachHandle.retired.is_(False))
        .order_by(models.AttachHandle.id).limit(attempts)).scalars().all()
    for handle_id in candidates:
        result = session.execute(
            sa.update(models.AttachHandle)
            .where(models.AttachHandle.id == handle_id,
                   models.AttachHandle.in_use.is_(False))
            .values(in_use=True, arq_id=arq_id,
                    updated_at=models.utcnow())
            .execution_options(synchronize_session=False))
        if result.rowcount == 1:
            return handle_id
    return None


def release_handles(session, arq_ids):
    """Free the attach handles held by ``arq_ids``; returns how many."""
    if not arq_ids:
        return 0
    result = session.execute(
        sa.update(models.AttachHandle)
        .where(models.AttachHandle.arq_id.in_(arq_ids))
        .values(in_use=False, arq_id=None, updated_at=models.utcnow())
        .execution_options(synchronize_session=False))
    return result.rowcount


# Nova notification bookkeeping

@transactional
def claim_notifications(session, arq_uuids):
    """Claim ``pending`` events: only the worker whose UPDATE matched sends.

    :returns: [(arq uuid, instance uuid, state)] claimed by this call.
    """
    claimed = []
    for arq_uuid in arq_uuids:
        result = session.execute(
            sa.update(models.ARQ)
            .where(models.ARQ.uuid == arq_uuid,
                   models.ARQ.notification == "pending")
            .values(notification="sending")
            .execution_options(synchronize_session=False))
        if result.rowcount == 1:
            row = session.execute(
                sa.select(models.ARQ.uuid, models.ARQ.instance_uuid,
                          models.ARQ.state)
                .where(models.ARQ.uuid == arq_uuid)).one()
            claimed.append(tuple(row))
    return claimed


@transactional
def finish_notifications(session, arq_uuids, outcome):
    """Record ``sent`` or ``failed`` for claimed events."""
    session.execute(
        sa.update(models.ARQ)
        .where(models.ARQ.uuid.in_(arq_uuids),
               models.ARQ.notification == "sending")
        .values(notification=outcome)
        .execution_options(synchronize_session=False))


# Devices and deployables

@reader
def device_list(session, type=None, vendor=None, hostname=None, limit=None,
                marker=None):
    """Devices filtered in SQL."""
    stmt = sa.select(models.Device)
    for column, value in ((models.Device.type, type),
                          (models.Device.vendor, vendor),
                          (models.Device.hostname, hostname)):
        if value is not None:
            stmt = stmt.where(column == value)
    return _paginate(session, stmt, models.Device, limit, marker)


@reader
def device_get(session, device_uuid):
    """One device by uuid; :raises DeviceNotFound:"""
    device = session.execute(
        sa.select(models.Device).where(models.Device.uuid == device_uuid)
    ).scalar_one_or_none()
    if device is None:
        raise exception.DeviceNotFound(ident=device_uuid)
    return device


@transactional
def device_set_status(session, device_uuid, status):
    """Set a device ``enabled`` or ``maintaining``."""
    device = device_get(session, device_uuid)
    device.status = status
    return device


@reader
def deployable_list(session, device_id=None, rp_uuid=None, name=None,
                    limit=None, marker=None):
    """Deployables filtered in SQL."""
    stmt = sa.select(models.Deployable)
    for column, value in ((models.Deployable.device_id, device_id),
                          (models.Deployable.rp_uuid, rp_uuid),
                          (models.Deployable.name, name)):
        if value is not None:
            stmt = stmt.where(column == value)
    return _paginate(session, stmt, models.Deployable, limit, marker)


@reader
def deployable_get(session, deployable_uuid):
    """One deployable by uuid; :raises DeployableNotFound:"""
    deployable = session.execute(
        sa.select(models.Deployable).where(
            models.Deployable.uuid == deployable_uuid)).scalar_one_or_none()
    if deployable is None:
        raise exception.DeployableNotFound(ident=deployable_uuid)
    return deployable


def attributes_of(session, deployable_ids):
    """{deployable id: [(key, value)]}."""
    result = {}
    if not deployable_ids:
        return result
    rows = session.execute(
        sa.select(models.Attribute).where(
            models.Attribute.deployable_id.in_(deployable_ids))
        .order_by(models.Attribute.id)).scalars()
    for attr in rows:
        result.setdefault(attr.deployable_id, []).append(
            (attr.key, attr.value))
    return result


# Attributes (the /v2/attributes API)

class AttributeNotFound(exception.NotFound):
    msg_fmt = "Attribute %(uuid)s could not be found."


class AttributeExists(exception.Conflict):
    msg_fmt = ("Deployable %(deployable)s already has an attribute "
               "%(key)r (%(uuid)s); delete it first.")


class UnknownDeployable(exception.Invalid):
    msg_fmt = ("deployable_id %(ident)r names no deployable (give its "
               "integer id or its uuid).")


def _deployable_id(session, ident):
    """The integer id of the deployable ``ident`` (id or uuid), or None."""
    if isinstance(ident, int) or str(ident).isdigit():
        column, value = models.Deployable.id, int(ident)
    elif is_uuid_like(ident):
        column, value = models.Deployable.uuid, str(uuidlib.UUID(ident))
    else:
        return None
    return session.execute(sa.select(models.Deployable.id).where(
        column == value)).scalar_one_or_none()


@reader
def attribute_list(session, deployable=None, key=None, limit=None,
                   marker=None):
    """Attributes filtered in SQL.

    :param deployable: a deployable's integer id or uuid; an unknown one
        matches nothing.
    :param key: only attributes with this key.
    """
    stmt = sa.select(models.Attribute)
    if deployable is not None:
        deployable_id = _deployable_id(session, deployable)
        if deployable_id is None:
            return []
        stmt = stmt.where(models.Attribute.deployable_id == deployable_id)
    if key is not None:
        stmt = stmt.where(models.Attribute.key == key)
    return _paginate(session, stmt, models.Attribute, limit, marker)


@reader
def attribute_get(session, attribute_uuid):
    """One attribute by uuid; :raises AttributeNotFound:"""
    attribute = None
    if is_uuid_like(attribute_uuid):
        attribute = session.execute(
            sa.select(models.Attribute).where(
                models.Attribute.uuid == str(uuidlib.UUID(attribute_uuid)))
        ).scalar_one_or_none()
    if attribute is None:
        raise AttributeNotFound(uuid=attribute_uuid)
    return attribute


@transactional
def attribute_create(session, deployable, key, value):
    """Add the attribute ``key = value`` to a deployable.

    :param deployable: the deployable's integer id or uuid.
    :raises UnknownDeployable: (400) no such deployable.
    :raises AttributeExists: (409) the deployable already has ``key``.
    :returns: the new attribute row.
    """
    deployable_id = _deployable_id(session, deployable)
    if deployable_id is None:
        raise UnknownDeployable(ident=deployable)
    existing = session.execute(
        sa.select(models.Attribute.uuid).where(
            models.Attribute.deployable_id == deployable_id,
            models.Attribute.key == key)).scalar_one_or_none()
    if existing is not None:
        raise AttributeExists(deployable=deployable, key=key,
                              uuid=existing)
    attribute = models.Attribute(uuid=new_uuid(),
                                 deployable_id=deployable_id, key=key,
                                 value=value)
    session.add(attribute)
    session.flush()
    return attribute


@transactional
def attribute_delete(session, attribute_uuid):
    """Delete one attribute; :raises AttributeNotFound:"""
    attribute = attribute_get(session, attribute_uuid)
    session.delete(attribute)


# Nova notifications left behind by a crashed worker

@transactional
def claim_stale_notifications(session, cutoffs, limit=None):
    """Claim events no live worker is sending, for a resend.

    One conditional UPDATE per ARQ (``WHERE notification = <as seen> AND
    updated_at < <cutoff>``, which also bumps ``updated_at``): when two
    workers race for the same ARQ, only one UPDATE matches.

    :param cutoffs: ``{notification value: naive UTC datetime}``: claim the
        ARQs in that bookkeeping state last changed before the datetime,
        e.g. ``{"pending": now - 60 s, "sending": now - 600 s}``.
    :param limit: claim at most this many.
    :returns: [(arq uuid, instance uuid, state)] claimed by this call.
    """
    if not cutoffs:
        return []
    changed = sa.func.coalesce(models.ARQ.updated_at, models.ARQ.created_at)
    conditions = {value: sa.and_(models.ARQ.notification == value,
                                 changed < cutoff)
                  for value, cutoff in cutoffs.items()}
    stmt = (sa.select(models.ARQ.id, models.ARQ.notification)
            .where(sa.or_(*conditions.values())).order_by(models.ARQ.id))
    if limit is not None:
        stmt = stmt.limit(limit)
    claimed = []
    for arq_id, seen in session.execute(stmt).all():
        result = session.execute(
            sa.update(models.ARQ)
            .where(models.ARQ.id == arq_id, conditions[seen])
            .values(notification="sending", updated_at=models.utcnow())
            .execution_options(synchronize_session=False))
        if result.rowcount == 1:
            row = session.execute(
                sa.select(models.ARQ.uuid, models.ARQ.instance_uuid,
                          models.ARQ.state)
                .where(models.ARQ.id == arq_id)).one()
            claimed.append(tuple(row))
    return claimed


@transactional
def periodic_lease_acquire(session, name, owner, duration):
    """Take or renew the lease of periodic task ``name`` for ``owner``.

    Succeeds when no one holds it, when its holder let it expire, or when
    ``owner`` already holds it (a renewal).

    :param duration: seconds the lease lasts from now.
    :returns: True when ``owner`` holds the lease now, else False.
    """
    now = models.utcnow()
    expires_at = now + datetime.timedelta(seconds=duration)
    lease = models.PeriodicLease
    result = session.execute(
        sa.update(lease)
        .where(lease.name == name,
               sa.or_(lease.owner == owner, lease.expires_at < now))
        .values(owner=owner, expires_at=expires_at)
        .execution_options(synchronize_session=False))
    if result.rowcount == 1:
        return True
    # NOTE(cyborg_lite): no row, or another owner's live lease. Two workers
    # inserting at once: the primary key lets one in; the other's savepoint
    # fails and it simply does not hold the lease.
    try:
        with session.begin_nested():
            session.execute(sa.insert(lease).values(
                name=name, owner=owner, expires_at=expires_at))
    except sa_exc.IntegrityError:
        return False
    return True


@transactional
def periodic_lease_release(session, name, owner):
    """End ``owner``'s lease of ``name`` (no-op if another holds it), so
    another worker can take the task over at once."""
    lease = models.PeriodicLease
    session.execute(
        sa.update(lease)
        .where(lease.name == name, lease.owner == owner)
        .values(expires_at=models.utcnow() - datetime.timedelta(seconds=1))
        .execution_options(synchronize_session=False))


@reader
def periodic_lease_get(session, name):
    """``(owner, expires_at)`` of the lease of ``name``, or None."""
    lease = models.PeriodicLease
    row = session.execute(sa.select(lease.owner, lease.expires_at)
                          .where(lease.name == name)).first()
    return tuple(row) if row else None
