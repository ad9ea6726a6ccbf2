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


"""Nova ``accelerator-request-bound`` events, sent after the PATCH reply.

Real Cyborg notifies inside the PATCH, before Nova's instance has a host, so
Nova answers 207/422 and survives only by polling. Here the handler answers
first; the events go out from a small thread pool, once per ARQ: the ARQ's
``notification`` column is claimed with a conditional UPDATE, so two API
workers can never both send it.

A worker that dies after a bind commits but before its event is out leaves
the ARQ ``pending`` (or ``sending``, if it died mid-send).
:func:`resend_pending` sends those once they are older than a grace period;
``cyborg-lite-manage notifications resend`` runs it by hand, a periodic task
can run it too.
"""

from concurrent import futures
import dataclasses
import datetime
import threading
import time

from oslo_log import log as logging

from accel_common import clients
from cyborg_lite import arq_states
from cyborg_lite.db import arqs as arq_db

LOG = logging.getLogger(__name__)

EVENT_NAME = "accelerator-request-bound"
COMPUTE_MICROVERSION = "2.82"
EVENTS_PATH = "/os-server-external-events"

#: seconds a ``pending`` event is left to the worker that bound the ARQ.
DEFAULT_GRACE = 60
#: floor of the seconds after which a ``sending`` claim counts as dead.
DEFAULT_STALE_SENDING = 600


class NovaNotifier:
    """Sends Nova events through openstacksdk (``[nova]`` options).

    :param conf: ConfigOpts with ``[nova]`` registered.
    :param db: the :class:`cyborg_lite.db.engine.Database` holding the ARQs.
    """

    def __init__(self, conf, db):
        self.conf = conf
        self.db = db
        self._lock = threading.Lock()
        self._executor = None
        self._connection = None
        self._warned = False

    @property
    def enabled(self):
        """True when ``[nova]`` says how to reach Nova."""
        enabled = clients.is_configured(self.conf, "nova")
        if not enabled and not self._warned:
            self._warned = True
            LOG.info("[nova] is not configured (standalone): no "
                     "accelerator-request-bound events will be sent")
        return enabled

    def _pool(self):
        with self._lock:
            if self._executor is None:
                self._executor = futures.ThreadPoolExecutor(
                    max_workers=self.conf.nova.notify_workers,
                    thread_name_prefix="nova-events")
            return self._executor

    def notify_later(self, arq_uuids, instances=None):
        """Queue the events of ``arq_uuids``; returns the future.

        :param instances: ``{arq uuid: instance uuid}`` of ARQs the caller
            has just bound (see :meth:`send`).
        """
        return self._pool().submit(self.send, list(arq_uuids), instances)

    def shutdown(self, wait=True):
        """Stop the thread pool (after the queued events, with ``wait``)."""
        if self._executor is not None:
            self._executor.shutdown(wait=wait)

    def _compute(self):
        if self._connection is None:
            self._connection = clients.adapter(self.conf, "nova")
        return self._connection

    def send(self, arq_uuids, instances=None):
        """Claim and send the pending events of ``arq_uuids``.

        :param instances: ``{arq uuid: instance uuid}`` of ARQs just bound
            to those instances: their claim needs no read when they still
            are (:func:`cyborg_lite.db.arqs.claim_notifications`).
        :returns: the events sent (empty when another worker claimed them
            or Nova is not configured).
        """
        if not arq_uuids or not self.enabled:
            return []
        claimed = arq_db.claim_notifications(self.db, arq_uuids, instances)
        return self.deliver(claimed)[0]

    def deliver(self, claimed):
        """Send events this worker claimed and record the outcome.

        :param claimed: [(arq uuid, instance uuid, ARQ state)].
        :returns: (events, True when Nova took them).
        """
        if not claimed:
            return [], True
        events = [{"name": EVENT_NAME, "server_uuid": instance, "tag": arq,
                   "status": arq_states.NOVA_EVENT_STATUS.get(state,
                                                              "failed")}
                  for arq, instance, state in claimed]
        ok = self._post_with_retries(events)
        arq_db.finish_notifications(self.db, [e["tag"] for e in events],
                                    "sent" if ok else "failed")
        return events, ok

    def send_window(self):
        """The longest a live worker may spend sending one batch (its
        retry sleeps, plus a minute per attempt for the HTTP calls)."""
        opts = self.conf.nova
        sleeps = sum(opts.notify_retry_interval * 2 ** n
                     for n in range(opts.notify_retries))
        return sleeps + 60 * (opts.notify_retries + 1)

    def _post_with_retries(self, events):
        delay = self.conf.nova.notify_retry_interval
        attempts = self.conf.nova.notify_retries + 1
        for attempt in range(1, attempts + 1):
            retry = self._post(events, attempt, attempts)
            if retry is None:
                return True
            if retry is False:
                return False
            events = retry
            if attempt < attempts:
                time.sleep(delay)
                delay *= 2
        LOG.error("Giving up on Nova events %s after %d attempts",
                  [e["tag"] for e in events], attempts)
        return False

    def _post(self, events, attempt, attempts):
        """One POST. :returns: None (done), False (permanent failure) or
        the events to retry."""
        try:
            response = self._compute().post(
                EVENTS_PATH, json={"events": events},
                microversion=COMPUTE_MICROVERSION, raise_exc=False)
        except Exception as error:  # connection refused, timeouts, ...
            LOG.warning("Nova events attempt %d/%d failed: %s", attempt,
                        attempts, error)
            return events
        status = response.status_code
        if status == 200:
            LOG.debug("Nova accepted events %s", [e["tag"] for e in events])
            return None
        if status == 207:
            # NOTE(cyborg_lite): 422 per event means the instance has no
            # host yet; Nova then finds the ARQ by polling, so it is final.
            # Only per-event server errors are worth another try.
            results = response.json().get("events", [])
            again = [e for e, r in zip(events, results)
                     if int(r.get("code", 200)) >= 500]
            for result in results:
                if int(result.get("code", 200)) not in (200, 422):
                    LOG.warning("Nova event %s: code %s", result.get("tag"),
                                result.get("code"))
            return again or None
        if status >= 500 or status in (408, 429):
            LOG.warning("Nova events attempt %d/%d answered %d", attempt,
                        attempts, status)
            return events
        LOG.error("Nova refused events %s with %d: %s",
                  [e["tag"] for e in events], status, response.text[:500])
        return False


@dataclasses.dataclass
class ResendResult:
    """What :func:`resend_pending` did."""

    #: ARQ uuids whose event Nova took.
    sent: list = dataclasses.field(default_factory=list)
    #: ARQ uuids whose event still failed (recorded ``failed``).
    failed: list = dataclasses.field(default_factory=list)
    #: False when ``[nova]`` is not configured (nothing was looked at).
    enabled: bool = True


def resend_pending(notifier, grace=DEFAULT_GRACE, stale_sending=None,
                   include_failed=False, limit=500, batch=50):
    """Send the events a crashed or restarted worker left behind.

    Claims, with one conditional UPDATE per ARQ (so two workers running this
    at once never both send an event), the ARQs whose event is

    - ``pending`` and older than ``grace`` seconds (the worker that bound
      them gets that long to send them itself);
    - ``sending`` and older than ``stale_sending`` seconds (its sender died
      mid-send; by default twice :meth:`NovaNotifier.send_window`, at least
      :data:`DEFAULT_STALE_SENDING`);
    - with ``include_failed``, ``failed`` and older than ``grace`` (Nova
      stayed unreachable through every retry),

    and sends them as :meth:`NovaNotifier.send` does.

    :param notifier: a :class:`NovaNotifier` (its ``db`` and ``[nova]``).
    :param limit: claim at most this many events per call.
    :param batch: events per POST to Nova.
    :returns: a :class:`ResendResult`.
    """
    result = ResendResult()
    if not notifier.enabled:
        result.enabled = False
        return result
    if stale_sending is None:
        stale_sending = max(DEFAULT_STALE_SENDING,
                            2 * notifier.send_window())
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    cutoffs = {"pending": now - datetime.timedelta(seconds=grace),
               "sending": now - datetime.timedelta(seconds=stale_sending)}
    if include_failed:
        cutoffs["failed"] = cutoffs["pending"]
    claimed = arq_db.claim_stale_notifications(notifier.db, cutoffs,
                                               limit=limit)
    if claimed:
        LOG.info("Resending %d Nova event(s) left behind: %s", len(claimed),
                 ", ".join(arq for arq, _, _ in claimed))
    for start in range(0, len(claimed), batch):
        events, ok = notifier.deliver(claimed[start:start + batch])
        (result.sent if ok else result.failed).extend(
            e["tag"] for e in events)
    return result
