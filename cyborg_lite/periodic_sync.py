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


"""The periodic inventory sync of the API process.

Every ``[inventory] sync_interval`` seconds, when ``[ironic]`` is
configured, the API applies the Ironic nodes' inventory documents to the
database: the same pass as ``cyborg-lite-manage inventory sync``
(:func:`cyborg_lite.placement.manage.sync_from_ironic`). Several API
workers share one database; a lease row in it (``periodic_leases``) lets
one worker at a time run the passes. The holder renews it each interval
and while a pass runs; when the holder dies, the lease expires and another
worker takes over. A failed pass (Ironic or an agent down) is logged and
tried again next interval.
"""

import logging
import os
import threading
import uuid as uuidlib

from cyborg_lite.db import api as db_api
from ironic_accel import clients

LOG = logging.getLogger(__name__)

#: the lease row of this task in ``periodic_leases``.
LEASE_NAME = "inventory-sync"
#: seconds a lease outlives the interval, for a worker slow to wake up.
LEASE_MARGIN = 30


def enabled(conf):
    """True when the periodic sync should run in this process."""
    return (conf.inventory.sync_interval > 0
            and clients.is_configured(conf, "ironic"))


class InventorySync:
    """Runs the inventory sync passes of one API process.

    :param conf: the API's ConfigOpts.
    :param db: the :class:`~cyborg_lite.db.api.Database`.
    :param programmer: the :class:`~cyborg_lite.programming.programmer.
        Programmer`, which reaches the host agents.
    :param owner: this process's name in the lease; unique by default.
    """

    def __init__(self, conf, db, programmer, owner=None):
        self.conf = conf
        self.db = db
        self.programmer = programmer
        self.owner = owner or f"{os.getpid()}-{uuidlib.uuid4().hex}"

    @property
    def lease_seconds(self):
        """How long a taken or renewed lease lasts."""
        return self.conf.inventory.sync_interval + LEASE_MARGIN

    def acquire(self):
        """Take or renew the lease; True when this process holds it."""
        return db_api.periodic_lease_acquire(self.db, LEASE_NAME, self.owner,
                                             self.lease_seconds)

    def release(self):
        """Give the lease up so another worker takes over at once."""
        db_api.periodic_lease_release(self.db, LEASE_NAME, self.owner)

    def run_once(self):
        """One pass if this process holds (or gets) the lease.

        :returns: the sync result, or None when another worker holds the
            lease.
        """
        from cyborg_lite.placement import manage

        if not self.acquire():
            LOG.debug("Inventory sync: another API worker holds the lease")
            return None
        done = threading.Event()
        keeper = threading.Thread(target=self._renew_until, args=(done,),
                                  name="inventory-sync-lease", daemon=True)
        keeper.start()
        try:
            result = manage.sync_from_ironic(self.conf, self.db,
                                             self.programmer)
        finally:
            done.set()
            keeper.join()
        LOG.info("Inventory sync: %d document(s) applied, %d node(s) "
                 "skipped", len(result["applied"]), len(result["skipped"]))
        if manage.sync_problems(result):
            for node, reason in sorted(result["skipped"].items()):
                LOG.warning("Inventory sync skipped node %s: %s", node,
                            reason)
            for line in manage.handles_lines(result):
                LOG.warning("Inventory sync: %s", line)
        return result

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

    def loop(self, stop):
        """Run a pass at start and every interval until ``stop`` is set;
        never raises. Gives the lease up on the way out."""
        interval = self.conf.inventory.sync_interval
        while not stop.is_set():
            try:
                self.run_once()
            except Exception:
                LOG.exception("Inventory sync pass failed; trying again in "
                              "%s s", interval)
            if stop.wait(interval):
                break
        try:
            self.release()
        except Exception:
            LOG.exception("Inventory sync: releasing the lease failed")
