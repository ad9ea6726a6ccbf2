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

"""What the database says, counted at each scrape.

Every API worker reads the same rows, so whichever answers a scrape gives
the same values; nothing here is kept in a process.
"""

import datetime

from oslo_log import log as logging
from prometheus_client import core

from cyborg_lite import arq_states
from cyborg_lite import states
from cyborg_lite.db import counts as counts_db
from cyborg_lite.db import models

LOG = logging.getLogger(__name__)

REGION_STATES = tuple(states.RegionState)


def _seconds_since(moment, now):
    return max(0.0, (now - moment).total_seconds()) if moment else 0.0


def _epoch(moment):
    # NOTE(metrics): every timestamp column holds naive UTC.
    return moment.replace(tzinfo=datetime.timezone.utc).timestamp()


class StateCollector:
    """A prometheus-client collector of :func:`cyborg_lite.db.counts.read`.

    :param db: the :class:`~cyborg_lite.db.engine.Database`.
    """

    def __init__(self, db):
        self.db = db

    def collect(self):
        """The metric families; ``cyborg_lite_database_up`` 0 (and nothing
        else from here) when the database could not be read."""
        up = core.GaugeMetricFamily(
            "cyborg_lite_database_up",
            "1 when this scrape could read the database, else 0 (the "
            "state metrics are then missing).")
        try:
            counts = counts_db.read(self.db)
        except Exception as error:
            LOG.warning("Metrics: the database could not be read: %s",
                        str(error).splitlines()[0] if str(error) else
                        type(error).__name__)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        yield from self._families(counts, models.utcnow())

    @staticmethod
    def _families(counts, now):
        by_state = core.GaugeMetricFamily(
            "cyborg_lite_regions",
            "Regions (deployables) by state: ready, programming, error. A "
            "region in error serves no bind until it is reset.",
            labels=["state"])
        for state in REGION_STATES + tuple(
                sorted(set(counts.regions) - set(REGION_STATES))):
            by_state.add_metric([state], counts.regions.get(state, 0))
        yield by_state

        arqs = core.GaugeMetricFamily(
            "cyborg_lite_arqs", "Accelerator requests by state.",
            labels=["state"])
        for state in arq_states.ALL:
            arqs.add_metric([state], counts.arqs.get(state, 0))
        yield arqs

        events = core.GaugeMetricFamily(
            "cyborg_lite_nova_events_undelivered",
            "accelerator-request-bound events not delivered to Nova, by "
            "state: pending (queued, or left by a dead worker for the "
            "reconciler's resend), sending, failed (every retry failed; "
            "'cyborg-lite-manage notifications resend --failed' retries "
            "them).", labels=["state"])
        oldest = core.GaugeMetricFamily(
            "cyborg_lite_nova_events_oldest_seconds",
            "Age of the oldest undelivered event of each state (0: none).",
            labels=["state"])
        for state in counts_db.UNDELIVERED:
            count, since = counts.events.get(state, (0, None))
            events.add_metric([state], count)
            oldest.add_metric([state], _seconds_since(since, now))
        yield events
        yield oldest

        ends = core.GaugeMetricFamily(
            "cyborg_lite_periodic_last_end_timestamp_seconds",
            "When the last pass of a leased periodic task (the inventory "
            "sync) ended, as a Unix time.", labels=["task"])
        for task, ended_at in sorted(counts.periodic_ends.items()):
            ends.add_metric([task], _epoch(ended_at))
        yield ends

        yield core.GaugeMetricFamily(
            "cyborg_lite_agents_not_answering",
            "Hosts whose agent stopped answering the API (binds needing "
            "them are refused until a probe gets an answer; GET "
            "/healthcheck in detail names them).",
            value=counts.agents_silent)
