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

"""The background work of an API process, on one mechanism.

The app factory (:func:`cyborg_lite.api.app.create_app`) starts one
:class:`Periodics` per process. Each task has its own daemon thread, so a
slow pass (an agent not answering) never delays another task:

- ``programming-leases``: renews the lease of every programming run this
  process waits for, every ``[programming] heartbeat_interval``;
- ``reconciler``: settles what a dead process or agent left behind and
  fills the function pools (:func:`.programming.reconciler.reconcile`),
  then resends the Nova events a crashed worker left pending
  (:func:`.notifier.resend_pending`); at start (``reconcile_on_start``)
  and every ``reconcile_interval``;
- ``inventory-sync``: applies the Ironic nodes' inventory documents, one
  pass at a time across workers (:class:`.inventory.lease.InventorySync`),
  every ``[inventory] sync_interval`` when ``[ironic]`` is configured;
- ``arq-reclaim``: deletes the ARQs of instances Nova answers 404 for
  (:class:`.reclaim.Reclaimer`), every ``[nova] reclaim_interval`` when
  ``[nova]`` is configured.

Every task is safe to run in any number of processes at once: the database
decides who does what (conditional updates, claims and leases).
"""

import dataclasses
import threading
import typing

from oslo_log import log as logging

from cyborg_lite import notifier as notifier_mod
from cyborg_lite import reclaim
from cyborg_lite.db import engine as db_engine
from cyborg_lite.inventory import lease
from cyborg_lite.metrics import process as metrics
from cyborg_lite.programming import reconciler

LOG = logging.getLogger(__name__)


@dataclasses.dataclass
class Task:
    """One periodic task.

    :param name: the thread's name.
    :param title: the task in log lines.
    :param interval: seconds between two passes; 0 or less runs one pass.
    :param run: the pass; what it raises is logged, and the next pass runs
        an interval later.
    :param at_start: run a pass at once, else first wait an interval.
    """

    name: str
    title: str
    interval: float
    run: typing.Callable[[], typing.Any]
    at_start: bool = True


class Periodics:
    """The periodic tasks of one API process.

    :param conf: the API's ConfigOpts.
    :param db: the :class:`~cyborg_lite.db.engine.Database`.
    :param programmer: the process's
        :class:`~cyborg_lite.programming.programmer.Programmer`.
    :param notifier: the :class:`~cyborg_lite.notifier.NovaNotifier`.
    :param schema: a :class:`~cyborg_lite.db.schema.Guard`: passes wait
        (one log line each) until the schema is current.
    """

    def __init__(self, conf, db, programmer, notifier=None, schema=None):
        self.conf = conf
        self.db = db
        self.programmer = programmer
        self.notifier = notifier
        self.schema = schema
        self.reclaimer = reclaim.Reclaimer(
            conf, db, getattr(programmer, "locks", None))
        self._stop = threading.Event()
        self._threads = []

    def tasks(self):
        """The tasks this process's configuration asks for."""
        opts = self.conf.programming
        tasks = [Task("programming-leases", "Renewing programming leases",
                      opts.heartbeat_interval,
                      self.programmer.renew_leases)]
        if opts.reconcile_on_start or opts.reconcile_interval > 0:
            tasks.append(Task("programming-reconciler", "Reconciler",
                              opts.reconcile_interval,
                              self.reconcile,
                              at_start=opts.reconcile_on_start))
        if lease.enabled(self.conf):
            syncer = lease.InventorySync(self.conf, self.db, self.programmer)
            tasks.append(Task("inventory-sync", "Inventory sync",
                              self.conf.inventory.sync_interval,
                              syncer.run_once))
        if self.reclaimer.enabled:
            # NOTE(cyborg_lite): not at start: a restarted API would look
            # up a batch of instances before it answered anything.
            tasks.append(Task("arq-reclaim", "ARQ reclaim",
                              self.conf.nova.reclaim_interval,
                              self.reclaimer.run_once, at_start=False))
        return tasks

    def reconcile(self):
        """One reconciler pass, then the Nova events left pending (also
        when the pass failed)."""
        try:
            reconciler.reconcile(self.programmer)
        finally:
            if self.notifier is not None and self.notifier.enabled:
                # NOTE(cyborg_lite): events of a process that died between
                # the bind's commit and the send; the claim in the database
                # keeps two workers from both sending one.
                notifier_mod.resend_pending(self.notifier)

    def start(self):
        """Start a thread per task (once)."""
        if self._threads:
            return
        self._threads = [threading.Thread(target=self._loop, args=(task,),
                                          name=task.name, daemon=True)
                         for task in self.tasks()]
        for thread in self._threads:
            thread.start()

    def _loop(self, task):
        metrics.periodic_started(task.name)
        if not task.at_start and self._stop.wait(task.interval):
            return
        while not self._stop.is_set():
            try:
                problem = self.schema and self.schema.problem()
                if problem:
                    metrics.periodic_failed(task.name)
                    LOG.error("%s skipped; trying again in %s s: %s",
                              task.title, task.interval, problem)
                else:
                    task.run()
            except Exception as error:
                metrics.periodic_failed(task.name)
                if db_engine.unreachable(error):
                    # NOTE(cyborg_lite): one line, as the API's requests
                    # log it: the database being down is not a bug here.
                    LOG.error("%s skipped, the database is unreachable; "
                              "trying again in %s s: %s", task.title,
                              task.interval, str(error).splitlines()[0])
                else:
                    LOG.exception("%s pass failed; trying again in %s s",
                                  task.title, task.interval)
            if task.interval <= 0 or self._stop.wait(task.interval):
                return

    def stop(self, timeout=10):
        """Ask every task to stop and wait up to ``timeout`` s for each."""
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout)
