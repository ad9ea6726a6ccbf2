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
first; the events go out from a few sender threads, once per ARQ: the ARQ's
``notification`` column is claimed with a conditional UPDATE, so two API
workers can never both send it. Events queued within ``[nova]
notify_batch_interval`` of each other leave together: one claim, one
``os-server-external-events`` call and one record of the outcome for the
batch, as Neutron batches its own events to Nova (``send_events_interval``).

A worker that dies after a bind commits but before its event is out leaves
the ARQ ``pending`` (or ``sending``, if it died mid-send).
:func:`resend_pending` sends those once they are older than a grace period;
``cyborg-lite-manage notifications resend`` runs it by hand, a periodic task
can run it too.
"""

import collections
from concurrent import futures
import dataclasses
import datetime
import threading
import time

from oslo_log import log as logging

from accel_common import clients
from cyborg_lite import arq_states
from cyborg_lite import states
from cyborg_lite.db import arqs as arq_db

LOG = logging.getLogger(__name__)

EVENT_NAME = "accelerator-request-bound"
COMPUTE_MICROVERSION = "2.82"
EVENTS_PATH = "/os-server-external-events"

#: seconds a ``pending`` event is left to the worker that bound the ARQ.
DEFAULT_GRACE = 60
#: floor of the seconds after which a ``sending`` claim counts as dead.
DEFAULT_STALE_SENDING = 600
#: most events in one os-server-external-events call.
MAX_BATCH = 50


class NovaNotifier:
    """Sends Nova events through openstacksdk (``[nova]`` options).

    :param conf: ConfigOpts with ``[nova]`` registered.
    :param db: the :class:`cyborg_lite.db.engine.Database` holding the ARQs.
    """

    def __init__(self, conf, db):
        self.conf = conf
        self.db = db
        self._lock = threading.Lock()
        self._queued = threading.Condition(self._lock)
        #: [(arq uuids, {arq uuid: instance uuid}, future)] not yet taken.
        self._queue = collections.deque()
        #: ARQs in the queue.
        self._waiting = 0
        self._senders = []
        #: sender threads waiting for the queue.
        self._idle = 0
        self._stopping = False
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

    def notify_later(self, arq_uuids, instances=None):
        """Queue the events of ``arq_uuids``; a sender thread sends them
        with those queued within ``[nova] notify_batch_interval``.

        :param instances: ``{arq uuid: instance uuid}`` of ARQs the caller
            has just bound (see :meth:`send`).
        :returns: a future of the events sent for ``arq_uuids`` (none
            after :meth:`shutdown`: they stay pending for
            :func:`resend_pending`).
        """
        future = futures.Future()
        with self._lock:
            if self._stopping:
                LOG.warning("Shutting down: the Nova events of %s are left "
                            "to the resend of pending events",
                            ", ".join(arq_uuids))
                future.set_result([])
                return future
            self._queue.append((list(arq_uuids), dict(instances or {}),
                                future))
            self._waiting += len(arq_uuids)
            if not self._idle and (len(self._senders)
                                   < self.conf.nova.notify_workers):
                sender = threading.Thread(
                    target=self._send_queued, daemon=True,
                    name=f"nova-events-{len(self._senders)}")
                self._senders.append(sender)
                sender.start()
            # NOTE(cyborg_lite): a sender gathering a batch sleeps until its
            # deadline; waking it for every event would only cost switches.
            if len(self._queue) == 1 or self._waiting >= MAX_BATCH:
                self._queued.notify()
        return future

    def shutdown(self, wait=True):
        """Send what is queued, then stop the sender threads (waiting for
        them with ``wait``)."""
        with self._lock:
            self._stopping = True
            self._queued.notify_all()
            senders = list(self._senders)
        if wait:
            for sender in senders:
                sender.join()

    def _take_batch(self):
        """The next batch from the queue (None when stopping and empty):
        what arrives within the batch interval of its first event, up to
        :data:`MAX_BATCH` ARQs."""
        with self._lock:
            # NOTE(cyborg_lite): a sender gathering a batch counts as idle,
            # so notify_later starts another only when all are sending.
            self._idle += 1
            try:
                while True:
                    while not self._queue and not self._stopping:
                        self._queued.wait()
                    if not self._queue:
                        return None
                    self._gather()
                    if self._queue:
                        return self._pop_batch()
            finally:
                self._idle -= 1

    def _gather(self):
        deadline = time.monotonic() + self.conf.nova.notify_batch_interval
        while not self._stopping and self._waiting < MAX_BATCH:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            self._queued.wait(remaining)

    def _pop_batch(self):
        batch, size = [], 0
        while self._queue and (not batch or size + len(
                self._queue[0][0]) <= MAX_BATCH):
            batch.append(self._queue.popleft())
            size += len(batch[-1][0])
        self._waiting -= size
        if self._queue:
            self._queued.notify()  # more than a batch: wake another sender
        return batch

    def _send_queued(self):
        while True:
            batch = self._take_batch()
            if batch is None:
                return
            uuids = [arq for arqs, _, _ in batch for arq in arqs]
            instances = {}
            for _, bound, _ in batch:
                instances.update(bound)
            try:
                sent = self.send(uuids, instances)
            except Exception as error:
                # NOTE(cyborg_lite): the events stay claimed or pending in
                # the database; resend_pending sends them later.
                LOG.exception("Sending Nova events for %s failed",
                              ", ".join(uuids))
                for _, _, future in batch:
                    future.set_exception(error)
                continue
            for arqs, _, future in batch:
                mine = set(arqs)
                future.set_result([e for e in sent if e["tag"] in mine])

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
        arq_db.finish_notifications(
            self.db, [e["tag"] for e in events],
            states.Notification.SENT if ok else states.Notification.FAILED)
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
                   include_failed=False, limit=500, batch=MAX_BATCH):
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
    cutoffs = {
        states.Notification.PENDING:
            now - datetime.timedelta(seconds=grace),
        states.Notification.SENDING:
            now - datetime.timedelta(seconds=stale_sending)}
    if include_failed:
        cutoffs[states.Notification.FAILED] = \
            cutoffs[states.Notification.PENDING]
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
