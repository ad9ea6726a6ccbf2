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

"""Settle what a dead API process or agent left behind.

Runs in every API process (at start and periodically) and as
``cyborg-lite-manage programming reconcile``. Guarded by the database, so
any number of workers may run it at once:

1. a region in ``programming`` whose lease went stale is taken over (one
   conditional UPDATE: one worker wins) and settled from the agent's
   reading: the target function confirmed -> ``ready`` (+ trait) and its
   waiting ARQs ``Bound``; still programming -> looked at again later;
   healthy but without the target (the agent was never asked: the API
   process died, or its answer was lost, between the bind's commit and the
   launch) -> the run is started again, at most ``[programming]
   relaunch_limit`` times (:mod:`cyborg_lite.db.relaunches`), and settles
   itself as any run; anything else (the agent reads an error, the limit
   reached, agent unreachable) -> ``error`` and its ARQs ``BindFailed``
   (+ ``failed`` events);
2. an ARQ in ``BindStarted`` that no programming run waits for any more is
   moved to ``BindFailed`` (+ event);
3. a region in ``error`` is read again: when its agent reads it healthy
   (after an agent restart or a reset on the host) it is ``ready`` again
   with the function read back; else its ``last_error`` is refreshed;
4. a ``ready`` region whose Placement update failed after its function was
   confirmed (its ``last_error`` starts with
   :data:`~.regions.PLACEMENT_FAILED`) gets that update again: its
   function trait, and ``reserved = 0``; ``last_error`` is cleared once
   Placement is right;
5. function pools are filled (:mod:`cyborg_lite.programming.pools`);
6. the lock traits of regions whose lock changed since this process last
   wrote them (every region after a start) are written again
   (:meth:`~cyborg_lite.scheduling.locks.LockTraits.repair`): a write
   that failed at bind time, a handle an adoption reserved.
"""

from concurrent import futures
import itertools

from oslo_log import log as logging

from accel_common import inventory
from cyborg_lite import arq_states
from cyborg_lite import exception
from cyborg_lite import states
from cyborg_lite.agent.drivers import base as driver_base
from cyborg_lite.db import arqs as arq_db
from cyborg_lite.db import attach_handles as handle_db
from cyborg_lite.db import models
from cyborg_lite.db import relaunches
from cyborg_lite.programming import pools as pools_mod
from cyborg_lite.programming import programmer as programmer_mod
from cyborg_lite.programming import regions

LOG = logging.getLogger(__name__)


def _job_for(session, deployable):
    device = session.get(models.Device, deployable.device_id)
    return programmer_mod.Job(
        regions=[programmer_mod.Region(deployable.id, deployable.uuid,
                                       deployable.region_id,
                                       deployable.rp_uuid)],
        host=device.hostname, pci_address=device.pci_address,
        vendor=programmer_mod.vendor_fragment(device),
        function_id=deployable.target_function_id,
        bitstream_id=deployable.target_bitstream_id)


def _read(programmer, job, region):
    """The agent's reading of a region, or an error text."""
    try:
        return programmer.agent_api().current_function(
            programmer.agent_host(job.host), job.pci_address,
            region.region_id), None
    except Exception as error:
        return None, programmer_mod.agent_message(error)


def _matches(job, reading):
    if reading is None or reading.get("state") != driver_base.READY:
        return False
    if job.function_id:
        return (driver_base.normalize_function_id(reading["function_id"])
                == driver_base.normalize_function_id(job.function_id))
    # NOTE(cyborg_lite): a bitstream target cannot be confirmed from the
    # function read back, so only a reset target (nothing) can match.
    return job.bitstream_id is None and job.function_id is None


def _single(session, deployable):
    device = session.get(models.Device, deployable.device_id)
    return device.program_mode == "single"


def _units(jobs):
    """The jobs to start again: the regions of a ``single`` device with
    the same target in one job (the device is programmed as a whole), any
    other region in a job of its own."""
    def key(item):
        job, single = item
        return (job.host, job.pci_address, job.function_id or "",
                job.bitstream_id or "", "" if single else str(job.ids[0]))

    units = []
    for _, group in itertools.groupby(sorted(jobs, key=key), key=key):
        group = [job for job, _ in group]
        units.append(programmer_mod.Job(
            regions=[r for job in group for r in job.regions],
            host=group[0].host, pci_address=group[0].pci_address,
            vendor=group[0].vendor, function_id=group[0].function_id,
            bitstream_id=group[0].bitstream_id))
    return units


def _relaunch(programmer, jobs, wait):
    """Start ``jobs`` (taken over) again in the background, each whose
    leases this process still holds.

    :returns: the uuids of their regions.
    """
    started, running = [], []
    for job in _units(jobs):
        # NOTE(cyborg_lite): the lease was taken before the other stale
        # regions were read (agent calls, seconds each when one is down):
        # renewed now, or another worker took the run meanwhile.
        if programmer.db.run(regions.renew, job.ids,
                             programmer.owner) != len(job.ids):
            continue
        LOG.warning("Programming %s on %s %s of regions %s never reached "
                    "the agent (its API process stopped or its answer was "
                    "lost): starting it again", job.target, job.host,
                    job.pci_address, [r.uuid for r in job.regions])
        running += programmer.launch([job])
        started += [r.uuid for r in job.regions]
    if wait:
        futures.wait(running)
    return started


def settle_stale(programmer, wait=False):
    """Step 1.

    :param wait: wait for the runs it starts again.
    :returns: {"settled": [...], "errored": [...],
        "still_programming": [...], "relaunched": [...]} (region uuids).
    """
    stale_after = programmer.conf.programming.stale_after
    limit = programmer.conf.programming.relaunch_limit
    summary = {"settled": [], "errored": [], "still_programming": []}
    candidates = programmer.db.run(
        lambda s: [(d.id, _job_for(s, d), _single(s, d))
                   for d in regions.stale(s, stale_after)])
    again = []
    for deployable_id, job, single in candidates:
        if not programmer.db.run(regions.take_over, deployable_id,
                                 programmer.owner, stale_after):
            continue
        region = job.regions[0]
        reading, problem = _read(programmer, job, region)
        if reading is not None and reading.get("state") == \
                driver_base.PROGRAMMING:
            # NOTE(cyborg_lite): the agent is still at it; leave the lease
            # to go stale again and look at the region next time.
            summary["still_programming"].append(region.uuid)
            continue
        if _matches(job, reading):
            programmer.settle_success(job, reading.get("function_id"),
                                      job.bitstream_id, programmer.owner)
            summary["settled"].append(region.uuid)
            continue
        healthy = (reading is not None
                   and reading.get("state") == driver_base.READY)
        # NOTE(cyborg_lite): healthy without the target: the agent was
        # never asked (or refused before it touched the region). Loading
        # the target again is safe; a launch marker would not tell more,
        # as a run the agent took and lost reads error.
        if healthy and programmer.db.run(relaunches.count, deployable_id,
                                         programmer.owner, limit):
            again.append((job, single))
            continue
        why = problem or (f"the agent reads {reading.get('state')} "
                          f"{reading.get('function_id')!r}: "
                          f"{reading.get('detail')}")
        stopped = ("its API process stopped" if not healthy or not limit
                   else f"its API process stopped, after {limit} "
                        f"restart(s)")
        programmer.settle_failure(
            job, f"programming {job.target} was interrupted ({stopped}); "
                 f"{why}", programmer.owner)
        summary["errored"].append(region.uuid)
    summary["relaunched"] = _relaunch(programmer, again, wait)
    return summary


def fail_orphans(programmer):
    """Step 2. :returns: the ARQs moved to ``BindFailed``."""
    notify = programmer.notifies
    released = set()

    def _run(session):
        released.clear()
        failed = []
        stale_after = programmer.conf.programming.stale_after
        for arq in regions.orphaned_arqs(session, stale_after):
            held = arq.deployable_id
            try:
                arq_db.move(session, arq, arq_states.BIND_FAILED,
                            deployable_id=None,
                            notification=(states.Notification.PENDING
                                          if notify else None))
            except exception.ARQBadState:  # another worker moved it first
                continue
            handle_db.release(session, [arq.id])
            if held:
                released.add(held)
            failed.append(arq.uuid)
        return failed

    failed = programmer.db.run(_run)
    programmer.locks.sync(released)
    programmer.notify(failed)
    return failed


def recheck_errors(programmer):
    """Step 3. :returns: {"recovered": [...], "still_error": [...]}."""
    summary = {"recovered": [], "still_error": []}

    def _load(session):
        return [(d.id, _job_for(session, d))
                for d in regions.in_state(session, regions.ERROR)]

    for deployable_id, job in programmer.db.run(_load):
        region = job.regions[0]
        reading, problem = _read(programmer, job, region)
        if reading is None:
            LOG.info("Region %s in error: agent not reachable (%s)",
                     region.uuid, problem)
            summary["still_error"].append(region.uuid)
            continue
        if reading.get("state") != driver_base.READY:
            programmer.db.run(regions.note_error, deployable_id,
                              f"the agent reads {reading.get('state')}: "
                              f"{reading.get('detail')}")
            summary["still_error"].append(region.uuid)
            continue
        function_id = reading.get("function_id")
        if not programmer.db.run(regions.recover, deployable_id,
                                 function_id):
            continue
        error = _update_placement(programmer, deployable_id, function_id,
                                  job)
        programmer.locks.sync([deployable_id])
        if error:
            programmer.db.run(regions.note_placement, deployable_id,
                              function_id, error, seen=None)
        LOG.info("Region %s recovered from error: the agent reads %r",
                 region.uuid, function_id)
        summary["recovered"].append(region.uuid)
    return summary


def _still_ready(db, deployable_id, function_id):
    """A check that a region still is ``ready`` with ``function_id``, asked
    right before each Placement write made on its behalf here."""
    def check():
        row = db.read(lambda session: session.get(models.Deployable,
                                                  deployable_id))
        return (row is not None and row.state == regions.READY
                and not row.retired and row.function_id == function_id)
    return check


def _update_placement(programmer, deployable_id, function_id, job):
    """Function trait and ``reserved = 0`` of a ``ready`` region.

    Nothing is written once the region moved on (a new programming run
    took it, ...): the run that moved it writes its provider.

    :returns: None, or the failure as ``last_error`` text.
    """
    trait = (inventory.function_trait(job.vendor, function_id)
             if function_id else None)
    return programmer.update_placement(
        job, trait, restore=True,
        still_wanted=_still_ready(programmer.db, deployable_id, function_id))


def _placement_failures(session):
    """``(id, function_id, last_error, job)`` of the ``ready`` regions
    whose latest Placement update failed."""
    return [(d.id, d.function_id, d.last_error, _job_for(session, d))
            for d in regions.in_state(session, regions.READY,
                                      error_prefix=regions.PLACEMENT_FAILED)]


def retry_placement(programmer):
    """Step 4. :returns: {"placement_fixed": [...],
    "placement_failing": [...]}."""
    summary = {"placement_fixed": [], "placement_failing": []}
    for deployable_id, function_id, seen, job in programmer.db.read(
            _placement_failures):
        region = job.regions[0]
        error = _update_placement(programmer, deployable_id, function_id,
                                  job)
        if not programmer.db.run(regions.note_placement, deployable_id,
                                 function_id, error, seen=seen):
            continue  # NOTE(cyborg_lite): moved on, see _update_placement.
        if error:
            summary["placement_failing"].append(region.uuid)
            continue
        LOG.info("Region %s: Placement updated after an earlier failure "
                 "(it runs %r)", region.uuid, function_id)
        summary["placement_fixed"].append(region.uuid)
    return summary


def reconcile(programmer, pools=True, wait=False):
    """One reconciler pass (steps 1-5 of the module doc).

    :param wait: wait for the programming runs it starts (stale runs
        started again, pools).
    :returns: a summary dict (for the manage command and the log).
    """
    summary = settle_stale(programmer, wait=wait)
    summary["failed_arqs"] = fail_orphans(programmer)
    summary.update(recheck_errors(programmer))
    summary.update(retry_placement(programmer))
    if pools and programmer.conf.pools.fill:
        summary["pools"] = pools_mod.fill(programmer, wait=wait)
    summary["locks_written"], summary["locks_failing"] = (
        programmer.locks.repair())
    interesting = {k: v for k, v in summary.items() if v}
    if interesting:
        LOG.info("Reconciler: %s", interesting)
    return summary
