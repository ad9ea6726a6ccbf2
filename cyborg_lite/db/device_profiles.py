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

"""Queries of the ``device_profiles`` table."""

import collections
import threading
import weakref

from oslo_db import exception as db_exc
import sqlalchemy as sa

from cyborg_lite import exception
from cyborg_lite.db import engine
from cyborg_lite.db import models


@engine.transactional
def create(session, name, groups, description=None,
                          uuid=None):
    """Store a device profile.

    :raises DeviceProfileExists: a profile has the name.
    :raises DeviceProfileUuidExists: a profile has the uuid.
    """
    taken = session.execute(
        sa.select(models.DeviceProfile.name, models.DeviceProfile.uuid).where(
            sa.or_(models.DeviceProfile.name == name,
                   models.DeviceProfile.uuid == uuid))).first()
    if taken is not None:
        _raise_taken(taken.name == name, name, uuid)
    profile = models.DeviceProfile(uuid=uuid or engine.new_uuid(), name=name,
                                   groups=groups, description=description)
    session.add(profile)
    try:
        session.flush()
    except db_exc.DBDuplicateEntry as error:
        # NOTE(cyborg_lite): a concurrent create took the name or the uuid
        # after the check; the database says which column.
        _raise_taken("name" in (error.columns or ["name"]), name, uuid)
    return profile


def _raise_taken(by_name, name, uuid):
    if by_name:
        raise exception.DeviceProfileExists(name=name)
    raise exception.DeviceProfileUuidExists(uuid=uuid)


@engine.reader
def get_all(session, names=None, limit=None, marker=None):
    """Device profiles, optionally only those named in ``names``."""
    stmt = sa.select(models.DeviceProfile)
    if names is not None:
        stmt = stmt.where(models.DeviceProfile.name.in_(names))
    return engine.paginate(session, stmt, models.DeviceProfile, limit, marker)


_BY_UUID = sa.select(models.DeviceProfile).where(
    models.DeviceProfile.uuid == sa.bindparam("ident"))
_BY_NAME = sa.select(models.DeviceProfile).where(
    models.DeviceProfile.name == sa.bindparam("ident"))


@engine.reader
def get(session, ident):
    """A device profile by uuid or by name.

    :raises DeviceProfileNotFound:
    """
    by_uuid = engine.is_uuid_like(ident)
    profile = session.execute(_BY_UUID if by_uuid else _BY_NAME,
                              {"ident": ident}).scalar_one_or_none()
    if profile is None and by_uuid:
        profile = session.execute(_BY_NAME,
                                  {"ident": ident}).scalar_one_or_none()
    if profile is None:
        raise exception.DeviceProfileNotFound(name=ident)
    return profile


#: what the create of ARQs needs of a profile.
Remembered = collections.namedtuple("Remembered", "id name groups")

#: {Database: {ident: Remembered}}.
_REMEMBERED = weakref.WeakKeyDictionary()
_REMEMBERED_LOCK = threading.Lock()
#: the most idents remembered per database (all are forgotten beyond).
REMEMBER_AT_MOST = 1000


def remembered(db, ident):
    """The profile ``ident`` named when last read through ``db``, or None.

    A profile is never changed, only created and deleted, and on MariaDB
    (10.2.4 and later), MySQL 8 and PostgreSQL its id is never given to
    another (InnoDB's AUTO_INCREMENT persists, sequences never go back):
    what is remembered of an id stays true as long as the id exists,
    which a foreign key to it checks. An ident may name another profile
    since (one deleted, another created by that name); the caller then
    finds the remembered id gone and forgets it. Nothing is remembered
    on sqlite, which gives the highest id again once its row is deleted.
    """
    return _REMEMBERED.get(db, {}).get(ident)


def remember(db, ident, profile):
    """Remember the profile that ``ident`` names, when ``ident`` names it
    by its uuid, or by its name and cannot be a uuid (a uuid-like ident
    names a profile by name only while no profile has it as uuid)."""
    if db.engine.dialect.name == "sqlite" or not (
            profile.uuid == ident or (
                profile.name == ident and not engine.is_uuid_like(ident))):
        return
    with _REMEMBERED_LOCK:
        known = _REMEMBERED.setdefault(db, {})
        if len(known) >= REMEMBER_AT_MOST:
            known.clear()
        known[ident] = Remembered(profile.id, profile.name, profile.groups)


def forget(db, ident):
    """Forget what ``ident`` named (its profile was deleted)."""
    with _REMEMBERED_LOCK:
        _REMEMBERED.get(db, {}).pop(ident, None)


@engine.transactional
def delete(session, idents):
    """Delete device profiles by uuid or name, all or none.

    :raises DeviceProfileNotFound: naming the first unknown one.
    :raises DeviceProfileInUse: when accelerator requests still use one.
    """
    profiles = [get(session, ident) for ident in idents]
    for profile in profiles:
        count = _arq_count(session, profile)
        if count:
            raise exception.DeviceProfileInUse(name=profile.name,
                                               count=count)
        # NOTE(cyborg_lite): ARQs created from the profile since the count
        # make the DELETE fail on its foreign key: then the profile is in
        # use after all. The savepoint keeps the transaction usable to
        # say by how many.
        try:
            with session.begin_nested():
                session.execute(_DELETE, {"id": profile.id})
        except db_exc.DBReferenceError:
            raise exception.DeviceProfileInUse(
                name=profile.name, count=_arq_count(session, profile))


_DELETE = sa.delete(models.DeviceProfile).where(
    models.DeviceProfile.id == sa.bindparam("id"))


def _arq_count(session, profile):
    return session.execute(
        sa.select(sa.func.count(models.ARQ.id)).where(
            models.ARQ.device_profile_id == profile.id)).scalar_one()
