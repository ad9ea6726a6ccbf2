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

"""Queries of the ``periodic_leases`` table: one holder at a time of a
periodic task across processes."""

import datetime

from oslo_db import exception as db_exc
import sqlalchemy as sa

from cyborg_lite.db import engine
from cyborg_lite.db import models


@engine.transactional
def acquire(session, name, owner, duration):
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
    except db_exc.DBDuplicateEntry:
        return False
    return True


@engine.transactional
def release(session, name, owner):
    """End ``owner``'s lease of ``name`` (no-op if another holds it), so
    another worker can take the task over at once."""
    lease = models.PeriodicLease
    session.execute(
        sa.update(lease)
        .where(lease.name == name, lease.owner == owner)
        .values(expires_at=models.utcnow() - datetime.timedelta(seconds=1))
        .execution_options(synchronize_session=False))


@engine.reader
def get(session, name):
    """``(owner, expires_at)`` of the lease of ``name``, or None."""
    lease = models.PeriodicLease
    row = session.execute(sa.select(lease.owner, lease.expires_at)
                          .where(lease.name == name)).first()
    return tuple(row) if row else None


@engine.transactional
def record_outcome(session, name, outcome):
    """Remember that the pass of ``name`` ended now, and how."""
    lease = models.PeriodicLease
    session.execute(
        sa.update(lease).where(lease.name == name)
        .values(last_ended_at=models.utcnow(), last_outcome=outcome[:255])
        .execution_options(synchronize_session=False))


@engine.reader
def last_outcome(session, name):
    """``(ended_at, outcome)`` of the last pass of ``name``, or None."""
    lease = models.PeriodicLease
    row = session.execute(
        sa.select(lease.last_ended_at, lease.last_outcome)
        .where(lease.name == name, lease.last_ended_at.is_not(None))).first()
    return tuple(row) if row else None
