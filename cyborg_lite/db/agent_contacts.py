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

"""Queries of the ``agent_contacts`` table: what the API processes last
heard from each host's agent.

Only the API calls the agents (agent-only hosts have no database), so every
API process writes here when a call to an agent answers or gets no answer,
and every process reads the same verdict: a bind needing a silent agent is
refused at once by whichever worker serves it, ``/healthcheck`` and the
metrics name the silent agents.
"""

import dataclasses
import datetime

from oslo_db import exception as db_exc
import sqlalchemy as sa

from cyborg_lite.db import engine
from cyborg_lite.db import models


@dataclasses.dataclass(frozen=True)
class Silent:
    """Why calls to an agent are not sent now."""

    hostname: str
    #: since when: the first unanswered call, or the call still waiting.
    since: datetime.datetime
    #: why (one line), or None for a call still waiting.
    error: str = None


def _upsert(session, hostname, values, first=None):
    """Update ``hostname``'s row with ``values``, or insert it with
    ``first`` (default ``values``: without references to the row)."""
    contact = models.AgentContact
    result = session.execute(
        sa.update(contact).where(contact.hostname == hostname)
        .values(**values).execution_options(synchronize_session=False))
    if result.rowcount:
        return
    # NOTE(cyborg_lite): the first contact with a host: two workers may
    # insert at once; the primary key lets one in and the other updates.
    try:
        with session.begin_nested():
            session.execute(sa.insert(contact).values(
                hostname=hostname, **(first or values)))
    except db_exc.DBDuplicateEntry:
        session.execute(
            sa.update(contact).where(contact.hostname == hostname)
            .values(**values).execution_options(synchronize_session=False))


@engine.transactional
def begin_call(session, hostname, waiting_limit, stale_after):
    """Decide whether a call to ``hostname``'s agent may be sent now, and
    note that one is waiting.

    :param waiting_limit: seconds another call may wait for an answer
        before further calls are refused instead of waiting too.
    :param stale_after: seconds after which a waiting call is forgotten
        (its process died before it could record the outcome).
    :returns: None to send the call, or a :class:`Silent` saying why not.
    """
    now = models.utcnow()
    contact = models.AgentContact
    row = session.execute(
        sa.select(contact.silent_since, contact.waiting_since,
                  contact.last_error)
        .where(contact.hostname == hostname)).first()
    if row is not None and row.silent_since is not None:
        return Silent(hostname, row.silent_since, row.last_error)
    waiting = row.waiting_since if row is not None else None
    if waiting is not None:
        age = (now - waiting).total_seconds()
        if waiting_limit < age <= stale_after:
            return Silent(hostname, waiting)
        if age <= stale_after:
            return None
    _upsert(session, hostname, {"waiting_since": now})
    return None


@engine.transactional
def answered(session, hostname):
    """A call to ``hostname``'s agent got an answer: it is not silent."""
    _upsert(session, hostname, {"answered_at": models.utcnow(),
                                "silent_since": None, "waiting_since": None,
                                "last_error": None})


@engine.transactional
def unanswered(session, hostname, error):
    """A call to ``hostname``'s agent got no answer (``error``, one line):
    it is silent from the first call left unanswered."""
    contact = models.AgentContact
    now = models.utcnow()
    values = {"waiting_since": None, "probed_at": now,
              "last_error": error[:255]}
    _upsert(session, hostname,
            dict(values, silent_since=sa.func.coalesce(
                contact.silent_since, contact.waiting_since, now)),
            first=dict(values, silent_since=now))


@engine.transactional
def claim_probe(session, hostname, interval):
    """Take the next probe of silent ``hostname`` for this process: True
    when no probe was sent in the last ``interval`` seconds (by any
    process)."""
    contact = models.AgentContact
    now = models.utcnow()
    due = now - datetime.timedelta(seconds=interval)
    result = session.execute(
        sa.update(contact)
        .where(contact.hostname == hostname,
               contact.silent_since.is_not(None),
               sa.or_(contact.probed_at.is_(None), contact.probed_at <= due))
        .values(probed_at=now).execution_options(synchronize_session=False))
    return result.rowcount == 1


def serving():
    """The clause of the silent agents of hosts that still have devices
    (a host taken out of the inventory keeps its row, but its agent is
    asked for nothing any more)."""
    contact, device = models.AgentContact, models.Device
    return sa.and_(contact.silent_since.is_not(None), sa.exists().where(
        device.hostname == contact.hostname, device.retired.is_(False)))


@engine.reader
def silent(session):
    """The agents that stopped answering, of hosts that still have
    devices, oldest first: ``[Silent]``."""
    contact = models.AgentContact
    rows = session.execute(
        sa.select(contact.hostname, contact.silent_since, contact.last_error)
        .where(serving())
        .order_by(contact.silent_since, contact.hostname)).all()
    return [Silent(*row) for row in rows]
