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

"""Preparing and unpreparing ResourceClaims through cyborg_lite.

A claim is prepared by one job (a thread) at a time: read the claim, take
the allocation results of this driver, create each device's accelerator
requests from its device profile and record them in the checkpoint,
allocate their units in Placement (with ``[placement]`` set:
:mod:`cyborg_lite_dra.ledger`; a refusal fails the claim, nothing bound),
bind them with ``instance_uuid`` = the claim's uid, ``hostname`` = the node and
``device_rp_uuid`` = the allocated deployable, wait until cyborg_lite has
resolved them (programming a region may take minutes), write the claim's CDI
spec, record the answer and say in the claim's status what it got
(:mod:`cyborg_lite_dra.claim_status`). A kubelet call waits ``[dra]
prepare_wait`` seconds for its claims' jobs; a job still running then is
answered "in progress" and goes on, and the kubelet's next call finds it
(or, after a restart, the checkpoint): ARQs are created once per claim and
bound once.

Unprepare stops the claim's job, deletes its ARQs (cyborg_lite frees their
handles), then its Placement allocations, removes the CDI spec and forgets
the claim: it needs only the
claim's uid, and a claim unknown or already unprepared is no error.
"""

import collections
import logging
import threading
import time

from cyborg_lite_dra import cdi
from cyborg_lite_dra import checkpoint as checkpoint_mod
from cyborg_lite_dra import claim_status
from cyborg_lite_dra import cyborg
from cyborg_lite_dra import devnodes
from cyborg_lite_dra import kube
from cyborg_lite_dra import ledger as ledger_mod

LOG = logging.getLogger(__name__)

#: A claim as the kubelet names it.
Claim = collections.namedtuple("Claim", ["namespace", "uid", "name"])

#: The answer for one claim: ``devices`` (dicts with ``requests``,
#: ``pool``, ``device``, ``cdi_ids``) or a non-empty ``error``.
Answer = collections.namedtuple("Answer", ["devices", "error"])

CONFIG_KEYS = {"deviceProfile", "apiVersion", "kind"}


class ClaimError(Exception):
    """The claim cannot be prepared; the message is its answer's error."""


class Cancelled(Exception):
    """The claim is being unprepared; its job stops."""


def _describe(claim):
    return f"ResourceClaim {claim.namespace}/{claim.name} ({claim.uid})"


def _profile_of(config, result, driver, default):
    """The device profile for one allocation result: the last opaque
    configuration of this driver that applies to its request (the claim's
    after the class's), else ``default``."""
    request = result.get("request", "")
    parent = request.split("/", 1)[0]
    profile = None
    for entry in config or []:
        opaque = entry.get("opaque") or {}
        if opaque.get("driver") != driver:
            continue
        requests = entry.get("requests") or []
        if requests and request not in requests and parent not in requests:
            continue
        parameters = opaque.get("parameters")
        if not isinstance(parameters, dict):
            raise ClaimError(f"the opaque configuration of driver {driver} "
                             f"must be a JSON object like "
                             f"{{\"deviceProfile\": \"<name>\"}}, got "
                             f"{parameters!r}")
        unknown = sorted(set(parameters) - CONFIG_KEYS)
        if unknown:
            raise ClaimError(f"unknown key(s) {', '.join(unknown)} in the "
                             f"opaque configuration of driver {driver}; "
                             f"only deviceProfile is understood")
        value = parameters.get("deviceProfile")
        if not isinstance(value, str) or not value:
            raise ClaimError(f"deviceProfile in the opaque configuration of "
                             f"driver {driver} must be a non-empty string, "
                             f"got {value!r}")
        profile = value
    if profile is None and not default:
        raise ClaimError(f"no device profile for request {request!r}: give "
                         f"one in the DeviceClass's or the claim's opaque "
                         f"configuration ({{\"deviceProfile\": \"<name>\"}}) "
                         f"or set [dra] device_profile")
    return profile or default


class _Job:
    def __init__(self, claim):
        self.claim = claim
        self.cancel = threading.Event()
        self.done = threading.Event()
        self.answer = None
        self.stage = "starting"
        self.thread = None


class Preparer:
    """Prepares and unprepares the claims of one node.

    :param conf: the plugin's ConfigOpts.
    :param cyborg_client: a :class:`cyborg_lite_dra.cyborg.Client`.
    :param kube_api: a :class:`cyborg_lite_dra.kube.Kube`.
    :param checkpoint: a :class:`cyborg_lite_dra.checkpoint.Checkpoint`.
    :param inventory: a :class:`cyborg_lite_dra.inventory.NodeInventory`.
    :param ledger: a :class:`cyborg_lite_dra.ledger.Ledger`, or None (no
        Placement allocations).
    """

    def __init__(self, conf, cyborg_client, kube_api, checkpoint, inventory,
                 ledger=None):
        self._conf = conf.dra
        self._driver = conf.dra.driver_name
        self._node = conf.dra.node_name
        self._cyborg = cyborg_client
        self._kube = kube_api
        self._checkpoint = checkpoint
        self._inventory = inventory
        self._ledger = ledger
        self._lock = threading.Lock()
        self._jobs = {}

    # The kubelet's two calls.

    def prepare(self, claims):
        """Prepare ``claims`` (:class:`Claim`); returns {uid: Answer}."""
        deadline = time.monotonic() + self._conf.prepare_wait
        answers, waiting = {}, {}
        for claim in claims:
            with self._lock:
                job = self._jobs.get(claim.uid)
                record = self._checkpoint.get(claim.uid)
                if job is None and record and \
                        record["state"] == checkpoint_mod.PREPARED:
                    answers[claim.uid] = self._answer_prepared(claim.uid,
                                                               record)
                    continue
                if job is not None and job.cancel.is_set():
                    answers[claim.uid] = Answer([], f"{_describe(claim)} is "
                                                    f"being unprepared")
                    continue
                if job is None:
                    job = self._start(claim)
            waiting[claim.uid] = job
        for uid, job in waiting.items():
            job.done.wait(max(0.0, deadline - time.monotonic()))
            if not job.done.is_set():
                answers[uid] = Answer([], (
                    f"{_describe(job.claim)} is still being prepared "
                    f"({job.stage}); the kubelet's next call gets the "
                    f"result"))
                continue
            with self._lock:
                if self._jobs.get(uid) is job:
                    del self._jobs[uid]
            answers[uid] = job.answer
        return answers

    def unprepare(self, claims):
        """Unprepare ``claims``; returns {uid: error or ""}."""
        deadline = time.monotonic() + self._conf.unprepare_wait
        answers = {}
        for claim in claims:
            if time.monotonic() >= deadline:
                answers[claim.uid] = (f"{_describe(claim)} not unprepared: "
                                      f"this call's time ran out; the "
                                      f"kubelet's next call does it")
                continue
            try:
                self._unprepare(claim, deadline)
                answers[claim.uid] = ""
            except (cyborg.CyborgError, OSError, ClaimError,
                    ledger_mod.LedgerError) as error:
                LOG.warning("Unpreparing %s failed: %s", _describe(claim),
                            error)
                answers[claim.uid] = str(error)
        return answers

    def stop(self, timeout=5.0):
        """Stop every job (on shutdown); the checkpoint keeps their ARQs."""
        with self._lock:
            jobs = list(self._jobs.values())
        for job in jobs:
            job.cancel.set()
        for job in jobs:
            job.thread.join(timeout)

    # Prepare.

    def _start(self, claim):
        job = _Job(claim)
        job.thread = threading.Thread(
            target=self._run, args=(job,), daemon=True,
            name=f"prepare-{claim.uid}")
        self._jobs[claim.uid] = job
        job.thread.start()
        return job

    def _run(self, job):
        claim = job.claim
        try:
            job.answer = self._prepare(job)
            LOG.info("Prepared %s: %s", _describe(claim),
                     [d["cdi_ids"] for d in job.answer.devices])
        except Cancelled:
            job.answer = Answer([], f"{_describe(claim)} is being "
                                    f"unprepared")
        except (ClaimError, cyborg.CyborgError, kube.KubeError,
                devnodes.DeviceNodeError, ledger_mod.LedgerError, OSError,
                ValueError) as error:
            LOG.warning("Preparing %s failed: %s", _describe(claim), error)
            job.answer = Answer([], str(error))
        except Exception as error:
            LOG.exception("Preparing %s failed", _describe(claim))
            job.answer = Answer([], f"unexpected error: {error}")
        finally:
            job.done.set()

    def _check(self, job, stage):
        if job.cancel.is_set():
            raise Cancelled()
        job.stage = stage

    def _prepare(self, job):
        claim = job.claim
        record = self._checkpoint.get(claim.uid)
        if record and record["state"] == checkpoint_mod.FAILED:
            self._check(job, "cleaning up the previous attempt")
            self._release(claim.uid, record)
            record = None
        if record is None:
            record = self._create(job)
            if record["state"] == checkpoint_mod.PREPARED:
                return self._answer_prepared(claim.uid, record)
        try:
            self._hold(job, record)
            self._bind(job, record)
            arqs = self._wait(job, record)
            return self._finish(job, record, arqs)
        except (ClaimError, cyborg.CyborgError, devnodes.DeviceNodeError,
                ledger_mod.LedgerError) as error:
            self._fail(claim, record, error)
            raise

    def _read_claim(self, claim):
        body = self._kube.read_claim(claim.namespace, claim.name)
        if body is None:
            raise ClaimError(f"{_describe(claim)} not found in the API "
                             f"server")
        uid = body.get("metadata", {}).get("uid")
        if uid != claim.uid:
            raise ClaimError(f"ResourceClaim {claim.namespace}/{claim.name} "
                             f"has uid {uid}, not {claim.uid} (deleted and "
                             f"created again?)")
        allocation = (body.get("status") or {}).get("allocation")
        if not allocation:
            raise ClaimError(f"{_describe(claim)} is not allocated")
        return allocation.get("devices") or {}

    def _create(self, job):
        """Read the claim, create its ARQs, record them; returns the
        record (already prepared when no result is this driver's)."""
        claim = job.claim
        self._check(job, "reading the ResourceClaim")
        allocated = self._read_claim(claim)
        plan = []
        for result in allocated.get("results") or []:
            if result.get("driver") != self._driver:
                continue
            if result.get("adminAccess"):
                raise ClaimError(f"request {result.get('request')!r} asks "
                                 f"for admin access, which this driver "
                                 f"does not give")
            if result.get("pool") != self._node:
                raise ClaimError(f"device {result.get('device')} is in pool "
                                 f"{result.get('pool')}, not this node's "
                                 f"({self._node})")
            device = self._inventory.find(result.get("device"))
            if device is None:
                raise ClaimError(f"device {result.get('device')} is not a "
                                 f"cyborg_lite deployable of {self._node}")
            profile = _profile_of(allocated.get("config"), result,
                                  self._driver, self._conf.device_profile)
            plan.append((result, device, profile))
        record = {"namespace": claim.namespace, "name": claim.name,
                  "state": checkpoint_mod.BINDING, "arqs": {},
                  "devices": [], "error": ""}
        if not plan:
            record["state"] = checkpoint_mod.PREPARED
            self._checkpoint.put(claim.uid, record)
            return record
        try:
            for result, device, profile in plan:
                self._check(job, f"creating the accelerator requests of "
                                 f"{device.name}")
                for arq in self._cyborg.create_arqs(profile):
                    record["arqs"][arq["uuid"]] = {
                        "request": result["request"],
                        "pool": result["pool"], "device": device.name,
                        "rp_uuid": device.rp_uuid}
                # NOTE(dra): recorded before anything is bound, so a
                # restart finds every ARQ this claim owns.
                self._checkpoint.put(claim.uid, record)
        except (Cancelled, cyborg.CyborgError) as error:
            self._fail(claim, record, error)
            raise
        return record

    def _hold(self, job, record):
        """Allocate the claim's units in Placement before any bind: one
        unit of its device's resource class per ARQ, on the device's
        provider."""
        if self._ledger is None:
            return
        self._check(job, "allocating its units in Placement")
        units = {}
        for entry in record["arqs"].values():
            device = self._inventory.find(entry["device"])
            if device is None or not device.resource_class:
                raise ClaimError(f"device {entry['device']} has no resource "
                                 f"class in cyborg_lite: its units cannot be "
                                 f"allocated in Placement")
            held = units.setdefault(entry["rp_uuid"], {})
            held[device.resource_class] = held.get(device.resource_class,
                                                   0) + 1
        self._ledger.hold(job.claim.uid, job.claim.namespace, units,
                          _describe(job.claim))

    def _bind(self, job, record):
        uid = job.claim.uid
        self._check(job, "binding its accelerator requests")
        bound = {a["uuid"] for a in self._cyborg.arqs_of(uid)}
        todo = {arq: (self._node, entry["rp_uuid"], uid)
                for arq, entry in record["arqs"].items() if arq not in bound}
        if todo:
            self._cyborg.bind(todo)

    def _wait(self, job, record):
        """Poll until every ARQ of the claim is resolved; returns them."""
        uid = job.claim.uid
        wanted = set(record["arqs"])
        while True:
            self._check(job, "waiting for cyborg_lite to bind (and program)")
            try:
                arqs = {a["uuid"]: a for a in self._cyborg.arqs_of(uid)}
            except cyborg.CyborgError as error:
                LOG.warning("Reading the ARQs of %s: %s; trying again", uid,
                            error)
                arqs = None
            if arqs is not None:
                missing = wanted - set(arqs)
                if missing:
                    raise ClaimError(
                        f"accelerator request(s) {', '.join(sorted(missing))}"
                        f" of {_describe(job.claim)} are no longer bound to "
                        f"it in cyborg_lite")
                failed = [a for u, a in arqs.items()
                          if u in wanted and a["state"] != cyborg.BOUND
                          and a["state"] in cyborg.RESOLVED]
                if failed:
                    raise ClaimError("cyborg_lite could not bind "
                                     + "; ".join(
                                         f"{a['uuid']} to device "
                                         f"{record['arqs'][a['uuid']]['device']}"
                                         f" ({a['state']})" for a in failed))
                if all(arqs[u]["state"] == cyborg.BOUND for u in wanted):
                    return arqs
            if job.cancel.wait(self._conf.poll_interval):
                raise Cancelled()

    def _finish(self, job, record, arqs):
        claim = job.claim
        self._check(job, "writing the CDI spec")
        nodes_of, by_resource = {}, {}
        for arq_uuid, entry in sorted(record["arqs"].items()):
            arq = arqs[arq_uuid]
            if arq.get("device_rp_uuid") not in (None, entry["rp_uuid"]):
                # NOTE(dra): cyborg_lite may move a bind to a sibling region
                # that can serve the profile; the container gets the handle
                # cyborg_lite gave, the claim keeps the allocated name.
                LOG.warning("cyborg_lite bound ARQ %s of %s to %s, not to "
                            "the allocated device %s (%s)", arq_uuid,
                            _describe(claim), arq["device_rp_uuid"],
                            entry["device"], entry["rp_uuid"])
            nodes = devnodes.device_nodes(
                arq, self._conf.sysfs_root, self._conf.simulated_device_node)
            nodes_of.setdefault(entry["device"], []).extend(nodes)
            device = self._inventory.find(entry["device"])
            kind = ((device and (device.resource_class or device.type))
                    or "accelerator").lower()
            by_resource.setdefault(f"{self._driver}/{kind}", []).append(
                (devnodes.pci_address(arq), nodes))
        common = {"env": devnodes.environment(by_resource)}
        shared = [n for nodes in nodes_of.values() for n in nodes
                  if n["path"] == "/dev/vfio/vfio"][:1]
        if shared:
            common["deviceNodes"] = shared
        devices = []
        for name, nodes in sorted(nodes_of.items()):
            own = [n for i, n in enumerate(nodes) if n not in shared
                   and n not in nodes[:i]]
            devices.append((name, {"deviceNodes": own}))
        spec = cdi.build_spec(self._driver, claim.uid, devices)
        spec["containerEdits"] = common
        spec["cdiVersion"] = cdi.minimum_version(spec)
        record["spec"] = spec
        record["devices"] = self._answer_devices(claim.uid, record)
        cdi.write_spec(self._conf.cdi_dir, self._driver, claim.uid, spec)
        record["state"] = checkpoint_mod.PREPARED
        self._checkpoint.put(claim.uid, record)
        # NOTE(dra): in the background, as the example driver does: a slow
        # API server must not hold the kubelet's answer.
        threading.Thread(
            target=claim_status.publish, daemon=True,
            name=f"status-{claim.uid}",
            args=(self._kube, self._driver, claim.namespace, claim.name,
                  claim.uid, claim_status.device_statuses(
                      self._driver, record, arqs, self._conf.sysfs_root)),
        ).start()
        return Answer(record["devices"], "")

    def _answer_devices(self, uid, record):
        seen = {}
        for entry in record["arqs"].values():
            key = (entry["pool"], entry["device"])
            requests = seen.setdefault(key, [])
            if entry["request"] not in requests:
                requests.append(entry["request"])
        return [{"requests": requests, "pool": pool, "device": device,
                 "cdi_ids": [cdi.device_id(self._driver, uid, device)]}
                for (pool, device), requests in sorted(seen.items())]

    def _answer_prepared(self, uid, record):
        spec = record.get("spec")
        if spec:
            # NOTE(dra): the CDI directory is often a tmpfs (/var/run): a
            # reboot empties it while the checkpoint stays.
            path = cdi.spec_path(self._conf.cdi_dir, self._driver, uid)
            try:
                with open(path, encoding="utf-8"):
                    pass
            except FileNotFoundError:
                cdi.write_spec(self._conf.cdi_dir, self._driver, uid, spec)
        return Answer(record["devices"], "")

    def _fail(self, claim, record, error):
        """Release what a failed attempt holds; record it as failed (so a
        release that failed too is tried again)."""
        record["state"] = checkpoint_mod.FAILED
        record["error"] = str(error)
        try:
            self._release(claim.uid, record)
        except (cyborg.CyborgError, ledger_mod.LedgerError,
                OSError) as release_error:
            LOG.warning("Releasing the ARQs of %s: %s", _describe(claim),
                        release_error)
            self._checkpoint.put(claim.uid, record)

    # Unprepare.

    def _release(self, uid, record):
        """Delete the claim's ARQs, Placement allocations and CDI spec;
        forget it."""
        self._cyborg.delete_instance(uid)
        if record:
            self._cyborg.delete_arqs(sorted(record.get("arqs", {})))
        if self._ledger is not None:
            # NOTE(dra): after the ARQs: a VM given the unit now finds its
            # handle free in cyborg_lite.
            self._ledger.release(uid)
        cdi.remove_spec(self._conf.cdi_dir, self._driver, uid)
        self._checkpoint.drop(uid)

    def _unprepare(self, claim, deadline):
        with self._lock:
            job = self._jobs.get(claim.uid)
            if job is not None:
                job.cancel.set()
        if job is not None:
            job.thread.join(max(0.0, deadline - time.monotonic()))
            if job.thread.is_alive():
                raise ClaimError(f"{_describe(claim)}: its prepare is still "
                                 f"stopping; the kubelet's next call "
                                 f"finishes unpreparing it")
            with self._lock:
                if self._jobs.get(claim.uid) is job:
                    del self._jobs[claim.uid]
        self._release(claim.uid, self._checkpoint.get(claim.uid))
        LOG.info("Unprepared %s", _describe(claim))
