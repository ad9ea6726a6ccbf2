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

"""Read-only counts for the metrics endpoint
(:mod:`cyborg_lite.metrics.state`): each a ``GROUP BY`` on an indexed or
small column, so a scrape costs a few milliseconds whatever the size of
the tables."""

import dataclasses

import sqlalchemy as sa

from cyborg_lite import states
from cyborg_lite.db import agent_contacts
from cyborg_lite.db import engine
from cyborg_lite.db import models

#: the ``arqs.notification`` values of events not yet delivered.
UNDELIVERED = (states.Notification.PENDING, states.Notification.SENDING,
               states.Notification.FAILED)


@dataclasses.dataclass
class Counts:
    """What :func:`read` found."""

    #: {region state: count} of regions not retired.
    regions: dict
    #: {ARQ state: count}.
    arqs: dict
    #: {notification state: (count, oldest ``updated_at`` or
    #: ``created_at``)} of the events not delivered (:data:`UNDELIVERED`).
    events: dict
    #: {periodic task: when its last pass ended} from the leases.
    periodic_ends: dict
    #: hosts (with devices) whose agent stopped answering the API.
    agents_silent: int = 0


@engine.reader
def read(session):
    """Count regions, ARQs and undelivered Nova events by state, and the
    agents not answering.

    :returns: a :class:`Counts`.
    """
    region = models.Deployable
    regions = dict(session.execute(
        sa.select(region.state, sa.func.count())
        .where(region.retired.is_(False)).group_by(region.state)).all())
    arq = models.ARQ
    arqs = dict(session.execute(
        sa.select(arq.state, sa.func.count()).group_by(arq.state)).all())
    changed = sa.func.coalesce(arq.updated_at, arq.created_at)
    events = {state: (count, oldest) for state, count, oldest in
              session.execute(
                  sa.select(arq.notification, sa.func.count(),
                            sa.func.min(changed))
                  .where(arq.notification.in_(UNDELIVERED))
                  .group_by(arq.notification)).all()}
    lease = models.PeriodicLease
    periodic_ends = dict(session.execute(
        sa.select(lease.name, lease.last_ended_at)
        .where(lease.last_ended_at.is_not(None))).all())
    agents_silent = session.execute(
        sa.select(sa.func.count()).select_from(models.AgentContact)
        .where(agent_contacts.serving())).scalar_one()
    return Counts(regions=regions, arqs=arqs, events=events,
                  periodic_ends=periodic_ends, agents_silent=agents_silent)
