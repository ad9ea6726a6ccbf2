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


"""One inventory sync pass at a time, across processes.

Every ``[inventory] sync_interval`` seconds, when ``[ironic]`` is
configured, the API applies the Ironic nodes' inventory documents to the
database (:mod:`cyborg_lite.periodics` runs :meth:`InventorySync.run_once`):
the same pass as ``cyborg-lite-manage inventory sync``
(:func:`cyborg_lite.inventory.ironic.sync_from_ironic`). Several API
workers share one database; a lease row in it (``periodic_leases``) lets
one pass at a time run, an API worker's or the command's: a pass takes the
lease, renews it while it runs and releases it when done. A worker starts
a pass only when the last pass, whoever ran it, ended an interval ago or
more, so the workers together run about one pass per interval. When a
worker dies during a pass, its lease expires and another worker takes over
an interval later. A failed pass (Ironic or an agent down) is logged and
tried again next interval.
"""

import contextlib
import datetime
import os
import threading
import time
import uuid as uuidlib

from oslo_log import log as logging

from accel_common import clients
from cyborg_lite.db import leases as lease_db
from cyborg_lite.db import models
from cyborg_lite.inventory import ironic

LOG = logging.getLogger(__name__)

#: the lease row of this task in ``periodic_leases``.
LEASE_NAME = "inventory-sync"
#: seconds a lease outlives the interval, for a worker slow to wake up.
LEASE_MARGIN = 30
#: seconds between two tries of :meth:`InventorySync.wait_for`.
WAIT_POLL = 0.5


def enabled(conf):
    """True when the periodic sync should run in this process."""
    return (conf.inventory.sync_interval > 0
            and clients.is_configured(conf, "ironic"))


class InventorySync:
    """Runs the inventory sync passes of one API process.

    :param conf: the API's ConfigOpts.
    :param db: the :class:`~cyborg_lite.db.engine.Database`.
    :param programmer: the :class:`~cyborg_lite.programming.programmer.
        Programmer`, which reaches the host agents (None when only the
        lease is used, as by ``inventory sync``).
    :param owner: this process's name in the lease (at most 64
        characters); unique by default.
    """

    def __init__(self, conf, db, programmer, owner=None):
        self.conf = conf
        self.db = db
        self.programmer = programmer
        self.owner = owner or (f"api-worker-{os.getpid()}-"
                               f"{uuidlib.uuid4().hex[:16]}")
        #: passes this process ran since its last full one (None: none
        #: yet, so the first is full).
        self.since_full = None

    @property
    def lease_seconds(self):
        """How long a taken or renewed lease lasts."""
        return self.conf.inventory.sync_interval + LEASE_MARGIN

    def acquire(self):
        """Take or renew the lease; True when this process holds it."""
        return lease_db.acquire(self.db, LEASE_NAME, self.owner,
                                             self.lease_seconds)

    def release(self):
        """Give the lease up so another worker takes over at once."""
        lease_db.release(self.db, LEASE_NAME, self.owner)

    def holder(self):
        """``(owner, expires_at)`` of the lease (naive UTC), or None."""
        return lease_db.get(self.db, LEASE_NAME)

    def due(self):
        """True when no pass ran (or runs) within the last interval.

        A released lease expired when its pass ended, so its expiry says
        when the last pass ended.
        """
        holder = self.holder()
        if holder is None:
            return True
        rested = models.utcnow() - datetime.timedelta(
            seconds=self.conf.inventory.sync_interval)
        return holder[1] <= rested

    def wait_for(self, seconds, waiting=None):
        """Take the lease, waiting up to ``seconds`` for the pass holding it.

        :param waiting: called with ``(owner, expires_at)`` each time a new
            holder makes this wait.
        :returns: True when this owner holds the lease now, else False.
        """
        deadline = time.monotonic() + seconds
        told = None
        while not self.acquire():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            holder = self.holder()
            if waiting is not None and holder and holder[0] != told:
                told = holder[0]
                waiting(*holder)
            time.sleep(min(WAIT_POLL, remaining))
        return True

    @contextlib.contextmanager
    def holding(self):
        """Renew the (taken) lease while the body runs; release it after,
        also when the body fails."""
        done = threading.Event()
        keeper = threading.Thread(target=self._renew_until, args=(done,),
                                  name="inventory-sync-lease", daemon=True)
        keeper.start()
        try:
            yield
        finally:
            done.set()
            keeper.join()
            try:
                self.release()
            except Exception:
                LOG.exception("Inventory sync: releasing the lease failed; "
                              "it expires by itself within %s s",
                              self.lease_seconds)

    def run_once(self):
        """One pass, when it is due and no other pass holds the lease.

        :returns: the sync result, or None when no pass ran.
        """
        if not self.due():
            LOG.debug("Inventory sync: a pass ran less than an interval ago "
                      "or runs now")
            return None
        if not self.acquire():
            LOG.debug("Inventory sync: another pass holds the lease")
            return None
        full = (self.since_full is None or self.since_full + 1
                >= self.conf.inventory.full_sync_every)
        try:
            with self.holding():
                result = ironic.sync_from_ironic(self.conf, self.db,
                                                 self.programmer, full=full)
        except Exception as error:
            self._record(f"failed: {error}")
            raise
        self.since_full = 0 if full else self.since_full + 1
        kind = "full" if full else "changes only"
        self._record(f"ok ({kind}): {len(result['applied'])} document(s) "
                     f"applied, {result['unchanged']} unchanged, "
                     f"{len(result['skipped'])} node(s) skipped")
        LOG.info("Inventory sync (%s): %d document(s) applied, %d "
                 "unchanged, %d node(s) skipped", kind,
                 len(result["applied"]), result["unchanged"],
                 len(result["skipped"]))
        if ironic.sync_problems(result):
            for node, reason in sorted(result["skipped"].items()):
                LOG.warning("Inventory sync skipped node %s: %s", node,
                            reason)
            for line in ironic.handles_lines(result):
                LOG.warning("Inventory sync: %s", line)
        return result

    def _record(self, outcome):
        try:
            lease_db.record_outcome(self.db, LEASE_NAME, outcome)
        except Exception:
            LOG.exception("Inventory sync: recording the pass's outcome "
                          "failed")

    def _renew_until(self, done):
        # NOTE(cyborg_lite): a pass may outlast the lease (agents timing
        # out one after the other); renew it while the pass runs.
        while not done.wait(self.lease_seconds / 3):
            try:
                if not self.acquire():
                    LOG.warning("Inventory sync: lost the lease during a "
                                "pass")
            except Exception:
                LOG.exception("Inventory sync: renewing the lease failed")
