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

"""The Programmer: loads functions into regions through the host agents.

Used three ways, all through the same region state machine
(:mod:`~cyborg_lite.programming.regions`):

- **bind** (:meth:`Programmer.start`, inside the bind transaction): the
  region is taken (``programming``), an attach handle is reserved for the
  ARQ, which stays ``BindStarted``; after the commit :meth:`launch` hands
  the work to a thread pool and the PATCH is answered 202 at once;
- **admin** (``PATCH /v2/deployables/{uuid}/program``) and **pools**
  (:meth:`program`): the same, without an ARQ, waiting for the result;
- **reset** (:meth:`program` with ``reset=True``): the agent clears the
  region, e.g. one left in ``error``.

A run asks the agent on the device's host to program and confirm, then
records the confirmed function, replaces the function trait, and resolves
the waiting ARQs (``Bound``, or ``BindFailed`` with the handle released),
and queues their Nova events. While it runs, the region's provider keeps
its capacity and carries the lock trait of what it is being programmed with
(:mod:`~cyborg_lite.scheduling.locks`): Nova can schedule boots of that
function, and boots asking for no function, to it, and their binds join
the run; a run that fails leaves the region ``error`` and its provider
reserved (``reserved = total``) until it is reconciled or reset. The API
process keeps nothing else: a run whose process died is found by its stale
lease and settled by the :mod:`~cyborg_lite.programming.reconciler`.
"""

from concurrent import futures
import dataclasses
import os
import threading
import time
import uuid as uuidlib

from oslo_log import log as logging

from accel_common import inventory
from accel_common.placement import tree
from cyborg_lite import arq_states
from cyborg_lite import context
from cyborg_lite import exception
from cyborg_lite import states
from cyborg_lite.agent import exception as agent_exception
from cyborg_lite.agent import rpcapi
from cyborg_lite.agent import service as agent_service
from cyborg_lite.agent import transport
from cyborg_lite.conf import agent as agent_conf
from cyborg_lite.db import arqs as arq_db
from cyborg_lite.db import attach_handles as handle_db
from cyborg_lite.db import binds as bind_db
from cyborg_lite.db import deployables as deployable_db
from cyborg_lite.db import devices as device_db
from cyborg_lite.db import models
from cyborg_lite.metrics import process as metrics
from cyborg_lite.programming import agent_watch
from cyborg_lite.programming import exception as prog_exception
from cyborg_lite.programming import providers as region_providers
from cyborg_lite.programming import regions
from cyborg_lite.scheduling import locks as locks_mod

LOG = logging.getLogger(__name__)

_PENDING = states.Notification.PENDING.value


@dataclasses.dataclass(frozen=True)
class Region:
    """One region of a run: enough to reach it without the database."""

    id: int
    uuid: str
    region_id: str
    rp_uuid: str


@dataclasses.dataclass
class Job:
    """One programming run of a unit of regions on one device."""

    regions: list
    host: str
    pci_address: str
    vendor: str
    function_id: str = None
    bitstream_id: str = None
    reset: bool = False
    #: {region id: (function_id, bitstream_id)} before the run took them,
    #: to give them back when it is abandoned before the agent starts.
    previous: dict = dataclasses.field(default_factory=dict)

    @property
    def ids(self):
        """Database ids of the unit's regions."""
        return [r.id for r in self.regions]

    @property
    def target(self):
        """What the run loads, for messages."""
        return regions.target_text(self.function_id, self.bitstream_id)


@dataclasses.dataclass
class Outcome:
    """How a run ended: ``ok``, the confirmed function or the error, and
    the ARQs it resolved."""

    ok: bool
    function_id: str = None
    image_id: str = None
    error: str = None
    arqs: list = dataclasses.field(default_factory=list)


def vendor_fragment(device):
    """The vendor part of function trait names, as the reporter writes it."""
    board = device.std_board_info or {}
    return tree.vendor_name({"vendor": board.get("vendor"),
                             "vendor_id": board.get("vendor_id")
                             or device.vendor})


def agent_message(error):
    """What went wrong with an agent call, for ``last_error`` and logs."""
    if isinstance(error, agent_exception.AgentError):
        return error.message
    if isinstance(error, exception.CyborgLiteException):
        return error.message
    return f"{type(error).__name__}: {error}"


class Programmer:
    """Programs regions through the host agents (see the module doc).

    :param conf: the API's ConfigOpts.
    :param db: the :class:`~cyborg_lite.db.engine.Database`.
    :param notifier: sends Nova events (``notify_later``, ``enabled``).
    :param agent_api: an :class:`~cyborg_lite.agent.rpcapi.AgentAPI`;
        by default one is built on first use (starting the embedded agent
        when the transport is in-process).
    :param providers: a :class:`~.providers.RegionProviders`.
    """

    def __init__(self, conf, db, notifier=None, agent_api=None,
                 providers=None):
        self.conf = conf
        self.db = db
        self.notifier = notifier
        self.providers = providers or region_providers.RegionProviders(conf)
        self.locks = locks_mod.LockTraits(db, self.providers)
        self.owner = f"{os.getpid()}-{uuidlib.uuid4().hex}"
        self._agent_api = agent_api
        self._embedded = None
        self._lock = threading.Lock()
        self._owned = set()
        self._executor = None
        self.watch = agent_watch.AgentWatch(conf, db, self.agent_api,
                                            self.agent_host)

    @property
    def embedded(self):
        """True when the agent runs inside this process."""
        return (transport.is_in_process(self.conf)
                and self.conf.programming.embedded_agent)

    def agent_api(self):
        """The RPC client of the host agents (starts the embedded agent)."""
        with self._lock:
            if self._agent_api is None:
                if self.embedded:
                    self._embedded = _start_embedded(self.conf)
                self._agent_api = rpcapi.AgentAPI(self.conf)
            return self._agent_api

    def agent_host(self, host):
        """The agent serving ``host``: itself, or the embedded one."""
        return self.conf.agent.host if self.embedded else host

    def start(self, session, arq, deployable, group):
        """Take ``deployable`` for programming what ``group`` asks for, and
        reserve an attach handle for ``arq`` (already ``BindStarted``).

        Runs inside the bind transaction. A region already being
        programmed with the same target is joined (the ARQ waits for that
        run); any other state refuses at once.

        :raises ProgrammingConflict: (409) busy, in use, in error.
        :raises NoFreeAttachHandle: (409).
        :returns: a :class:`Job` to :meth:`launch` after the commit, or None
            when the ARQ joined a run already under way.
        """
        wanted = deployable_db.needs_programming(group, deployable)
        key, value = wanted
        function_id = value if key == "accel:function_id" else None
        bitstream_id = value if key == "accel:bitstream_id" else None
        asked = regions.target_text(function_id, bitstream_id)
        if not self.conf.programming.enabled:
            raise prog_exception.ProgrammingDisabled(
                deployable=deployable.uuid, asked=asked,
                running=regions.running_text(deployable))
        device = session.get(models.Device, deployable.device_id)
        if deployable.state == regions.PROGRAMMING:
            if (deployable.target_function_id,
                    deployable.target_bitstream_id) == (function_id,
                                                        bitstream_id):
                bind_db.hold(session, arq, deployable)
                return None
            raise prog_exception.RegionBusy(
                deployable=deployable.uuid, arq=arq.uuid, asked=asked,
                target=regions.target_text(deployable.target_function_id,
                                           deployable.target_bitstream_id))
        try:
            job = self.begin(session, deployable, device, function_id,
                             bitstream_id, allowed=(regions.READY,),
                             arq=arq.uuid)
        except prog_exception.RegionBusy:
            # NOTE(cyborg_lite): read ready before another bind's start of
            # the same content committed (begin re-read it): join that run.
            if (deployable.state, deployable.target_function_id,
                    deployable.target_bitstream_id) == (
                        regions.PROGRAMMING, function_id, bitstream_id):
                bind_db.hold(session, arq, deployable)
                return None
            raise
        bind_db.hold(session, arq, deployable)
        return job

    def begin(self, session, deployable, device, function_id, bitstream_id,
              allowed, arq=None, reset=False):
        """Take ``deployable``'s programming unit for this process (inside
        the caller's transaction).

        :raises ProgrammingConflict: busy, in use, in error or retired.
        :returns: the :class:`Job` to run after the commit.
        """
        asked = ("a reset" if reset
                 else regions.target_text(function_id, bitstream_id))
        running = regions.running_text(deployable)
        unit = regions.unit_of(session, deployable, device)
        previous = {d.id: (d.function_id, d.bitstream_id) for d in unit}
        refused = regions.begin(session, unit, self.owner, function_id,
                                bitstream_id, allowed=allowed)
        if refused is not None:
            if refused.state == regions.PROGRAMMING:
                raise prog_exception.RegionBusy(
                    deployable=refused.uuid, arq=arq or "(none)",
                    asked=asked, target=regions.target_text(
                        refused.target_function_id,
                        refused.target_bitstream_id))
            detail = (f" ({refused.last_error})" if refused.last_error
                      else "")
            raise prog_exception.RegionNotProgrammable(
                deployable=refused.uuid,
                state="retired" if refused.retired else refused.state,
                detail=detail + "; an administrator can reset it"
                if refused.state == regions.ERROR else detail)
        in_use = handle_db.in_use_count(session, [d.id for d in unit])
        if in_use:
            raise prog_exception.RegionInUse(
                deployable=deployable.uuid, running=running, count=in_use,
                scope=("device (program_mode single)"
                       if device.program_mode == "single" else "region"),
                asked=asked, arq_text=f" for ARQ {arq}" if arq else "")
        return Job(regions=[Region(d.id, d.uuid, d.region_id, d.rp_uuid)
                            for d in unit],
                   host=device.hostname, pci_address=device.pci_address,
                   vendor=vendor_fragment(device),
                   function_id=function_id, bitstream_id=bitstream_id,
                   reset=reset, previous=previous)

    def check_images(self, jobs):
        """Ask each job's agent which image it would load, before the
        region is touched (the bind path: what fails here is answered to
        Nova's PATCH instead of as a late ``failed`` event).

        :returns: ``[(job, error)]`` of the jobs that cannot run: no image,
            more than one, or an agent that did not answer (refused at once
            while it is silent, see :mod:`~.agent_watch`).
        """
        refused = []
        checked = [job for job in jobs if job is not None and not job.reset]
        # NOTE(cyborg_lite): renew the regions' leases while the agent is
        # asked (up to image_check_timeout), or another worker's reconciler
        # takes them for stale; launch() renews them again.
        ids = {region_id for job in checked for region_id in job.ids}
        with self._lock:
            ids -= self._owned
            self._owned.update(ids)
        try:
            for job in checked:
                try:
                    self.watch.call(job.host, lambda job=job: (
                        self.agent_api().find_image(
                            self.agent_host(job.host),
                            bitstream_id=job.bitstream_id,
                            function_id=job.function_id,
                            timeout=(self.conf.programming
                                     .image_check_timeout))))
                except Exception as error:
                    refused.append((job, error))
        finally:
            with self._lock:
                self._owned.difference_update(ids)
        return refused

    def abandon(self, job, reason):
        """Give a job's regions back as they were, before the agent was
        asked to do anything: ``ready`` with their previous content; the
        ARQs waiting for them ``BindFailed`` with their handles released.

        :returns: the uuids of those ARQs.
        """
        notify = self.notifies

        def _run(session):
            if not regions.abandon(session, job.previous, self.owner,
                                   reason):
                return []
            return _fail_waiting(session, job.ids, notify)

        failed = self.db.run(_run)
        with self._lock:
            self._owned.difference_update(job.ids)
        self.locks.sync(job.ids)
        LOG.info("Programming %s on %s %s abandoned before it started: %s",
                 job.target, job.host, job.pci_address, reason)
        return failed

    def launch(self, jobs):
        """Run ``jobs`` in the background (after their transaction
        committed). :returns: their futures."""
        jobs = [job for job in jobs if job is not None]
        if not jobs:
            return []
        with self._lock:
            for job in jobs:
                self._owned.update(job.ids)
            if self._executor is None:
                self._executor = futures.ThreadPoolExecutor(
                    max_workers=self.conf.programming.workers,
                    thread_name_prefix="programming")
            executor = self._executor
        # NOTE(cyborg_lite): the run logs with its request's ids.
        return [executor.submit(context.carry(self.run), job)
                for job in jobs]

    def prepare(self, deployable_uuid, function_id=None, bitstream_id=None,
                reset=False, allowed=regions.ADMIN_STARTABLE):
        """Take a region for an operator's program or reset (no ARQ).

        :raises DeployableNotFound:
        :raises ProgrammingConflict: busy, in use, retired.
        :returns: a :class:`Job`, or None when the region already runs
            exactly that (nothing to do).
        """
        def _run(session):
            deployable = deployable_db.get(session, deployable_uuid)
            device = session.get(models.Device, deployable.device_id)
            if (not reset and deployable.state == regions.READY
                    and ((function_id and deployable.function_id
                          == function_id)
                         or (bitstream_id and deployable.bitstream_id
                             == bitstream_id))):
                return None
            return self.begin(session, deployable, device, function_id,
                               bitstream_id, allowed=allowed, reset=reset)

        job = self.db.run(_run)
        if job is not None:
            with self._lock:
                self._owned.update(job.ids)
        return job

    def program(self, deployable_uuid, function_id=None, bitstream_id=None,
                reset=False):
        """Program (or reset) a region now and wait for the outcome.

        :returns: an :class:`Outcome` (``ok`` True also when there was
            nothing to do).
        """
        job = self.prepare(deployable_uuid, function_id, bitstream_id,
                           reset=reset)
        if job is None:
            return Outcome(ok=True, function_id=function_id)
        return self.run(job)

    def run(self, job):
        """Program the job's regions and settle the outcome (never raises).
        """
        started = time.monotonic()
        try:
            function_id, image_id = self._program(job)
        except Exception as error:
            self.watch.after(job.host, error)
            message = (f"programming {job.target} on {job.host} "
                       f"{job.pci_address} failed: {agent_message(error)}")
            LOG.warning("%s", message)
            if not isinstance(error, (agent_exception.AgentError,
                                      exception.CyborgLiteException)):
                LOG.exception("Unexpected error while programming")
            outcome = self.settle_failure(job, message, self.owner)
        else:
            self.watch.after(job.host, None)
            outcome = self.settle_success(job, function_id, image_id,
                                          self.owner)
        finally:
            with self._lock:
                self._owned.difference_update(job.ids)
        metrics.programming_ended(outcome.ok, time.monotonic() - started)
        return outcome

    def _program(self, job):
        # NOTE(cyborg_lite): no reservation while the region is programmed:
        # its lock trait already keeps every other content's boots away, and
        # the boots it will serve (its function's, and those asking for no
        # function) join the run instead of finding no host while it lasts.
        agent = self.agent_api()
        host = self.agent_host(job.host)
        function_id = image_id = None
        for region in job.regions:
            if job.reset:
                agent.reset_region(host, job.pci_address, region.region_id)
                continue
            result = agent.program_region(
                host, job.pci_address, region.region_id,
                bitstream_id=job.bitstream_id, function_id=job.function_id)
            function_id = result["function_id"]
            image_id = (result.get("image") or {}).get("id")
        return function_id, image_id

    @property
    def notifies(self):
        """True when Nova gets events (``[nova]`` configured)."""
        return bool(self.notifier is not None and self.notifier.enabled)

    def notify(self, arq_uuids):
        """Queue the Nova events of ``arq_uuids`` (marked ``pending``)."""
        if arq_uuids and self.notifies:
            self.notifier.notify_later(arq_uuids)

    def settle_success(self, job, function_id, image_id, owner):
        """Record a confirmed function: trait, ``reserved``, the region
        ``ready``, waiting ARQs ``Bound`` (+ events)."""
        trait = (inventory.function_trait(job.vendor, function_id)
                 if function_id else None)
        error = self.update_placement(job, trait, restore=True)
        notify = self.notifies

        def _run(session):
            if not regions.finish(session, job.ids, owner, function_id,
                                  image_id):
                return None
            if error:
                deployable_db.set_last_error(session, job.ids, error)
            bound = []
            for arq in regions.waiting_arqs(session, job.ids):
                arq_db.move(session, arq, arq_states.BOUND,
                            notification=_PENDING if notify else None)
                bound.append(arq.uuid)
            return bound

        bound = self.db.run(_run)
        self.locks.sync(job.ids)
        if bound is None:
            LOG.warning("Programming of %s finished after its lease was "
                        "taken over; the reconciler settles it",
                        [r.uuid for r in job.regions])
            return Outcome(ok=True, function_id=function_id,
                           image_id=image_id)
        LOG.info("Regions %s run %s now; bound %s",
                 [r.uuid for r in job.regions], function_id, bound)
        self.notify(bound)
        return Outcome(ok=True, function_id=function_id, image_id=image_id,
                       arqs=bound)

    def settle_failure(self, job, message, owner):
        """Region ``error`` (content unknown), waiting ARQs ``BindFailed``
        with their handles released (+ ``failed`` events)."""
        notify = self.notifies

        def _run(session):
            if not regions.fail(session, job.ids, owner, message):
                return None
            return _fail_waiting(session, job.ids, notify)

        failed = self.db.run(_run)
        # NOTE(cyborg_lite): reserved = total: a region in error must not be
        # scheduled to until it is reconciled or reset.
        self.update_placement(job, None, restore=False, reserve=True)
        self.locks.sync(job.ids)
        if failed is None:
            return Outcome(ok=False, error=message)
        self.notify(failed)
        return Outcome(ok=False, error=message, arqs=failed)

    def _device_enabled(self, job):
        """Is the device of ``job``'s regions enabled now?"""
        status = self.db.read(device_db.status_of_deployable,
                              job.regions[0].id)
        return status == states.DeviceStatus.ENABLED

    def update_placement(self, job, trait, restore, still_wanted=None,
                         reserve=False):
        """Set the function trait of the job's regions and, with
        ``restore`` (and the device enabled now), ``reserved = 0``; with
        ``reserve``, ``reserved = total`` (a region in error).

        :param still_wanted: see
            :meth:`~.placement.RegionProviders.set_function_trait`.
        :returns: None when no write failed, else the failures as a
            ``last_error`` text starting with
            :data:`~.regions.PLACEMENT_FAILED` (the reconciler retries
            those).
        """
        problems = []
        # NOTE(cyborg_lite): the device may have been disabled (reserved =
        # total by maintenance.set_status) or enabled while the run went
        # on; its status now decides, not the one the run started with.
        enabled = restore and self._device_enabled(job)
        for region in job.regions:
            try:
                self.providers.set_function_trait(
                    region.rp_uuid, trait, still_wanted=still_wanted)
                if enabled:
                    self.providers.restore(region.rp_uuid,
                                           still_wanted=still_wanted)
                elif reserve:
                    self.providers.reserve(region.rp_uuid,
                                           still_wanted=still_wanted)
            except Exception as error:
                LOG.error("Placement update of %s failed: %s",
                          region.rp_uuid, error)
                problems.append(f"{regions.PLACEMENT_FAILED} {error}")
        if enabled and not problems and not self._device_enabled(job):
            # NOTE(cyborg_lite): disabled while the restore went on; the
            # disable reserves again after its own status commit, so one
            # of the two sees the other and reserved ends = total.
            for region in job.regions:
                try:
                    self.providers.reserve(region.rp_uuid,
                                           still_wanted=still_wanted)
                except Exception as error:
                    problems.append(f"{regions.PLACEMENT_FAILED} {error}")
        return "; ".join(problems) or None

    def renew_leases(self):
        """Renew the lease of every run this process is waiting for."""
        with self._lock:
            owned = list(self._owned)
        if owned:
            self.db.run(regions.renew, owned, self.owner)
        return len(owned)

    def stop(self):
        """Wait for running jobs, stop the embedded agent."""
        self.watch.stop()
        if self._executor is not None:
            self._executor.shutdown(wait=True)
        if self._embedded is not None:
            self._embedded.stop()
            self._embedded = None


def _fail_waiting(session, deployable_ids, notify):
    """The ARQs waiting for these regions' run: ``BindFailed``, their
    handles released (+ ``failed`` events when ``notify``).

    :returns: their uuids.
    """
    arqs = regions.waiting_arqs(session, deployable_ids)
    handle_db.release(session, [a.id for a in arqs])
    for arq in arqs:
        arq_db.move(session, arq, arq_states.BIND_FAILED, deployable_id=None,
                    notification=_PENDING if notify else None)
    return [a.uuid for a in arqs]


def _start_embedded(conf):
    """Start the in-process agent; its sim state and image catalog default
    to ``$state_path`` instead of /var/lib (no root needed)."""
    defaults = {o.name: o.default for o in agent_conf.agent_opts}
    for name, sub in (("sim_state_dir", "sim"),
                      ("image_catalog_dir", "images")):
        if conf.agent[name] == defaults[name]:
            conf.set_override(name, os.path.join(conf.state_path, sub),
                              group="agent")
    return agent_service.start_embedded(conf)
