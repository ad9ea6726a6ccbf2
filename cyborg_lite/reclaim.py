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

"""Reclaiming the ARQs of instances Nova no longer has.

Nova deletes a server's ARQs when it deletes the server, but not always: for
a port's ARQ it finds the ARQ in the port's ``binding:profile``, which it
reads with the server owner's token, and Neutron's default policy shows that
field only to admin and service users. The ARQ then stays bound, and its
attach handle (a VF) in use, after Placement freed the allocation.

:class:`Reclaimer` asks Nova, with cyborg_lite's ``[nova]`` service
credentials, about the instances of resolved ARQs, a bounded batch per pass,
and deletes the ARQs (freeing their handles) of every instance Nova answers
404 for. Any other answer, an error or a timeout leaves the ARQs alone, and
so does a pass whose credentials cannot list every project's servers (Nova
answers 404 for a server of another project too).

Each pass also deletes, without asking Nova, the ARQs Nova never learned of
(:mod:`cyborg_lite.db.arq_reaper`): created with a service token, still
``Initial`` with no instance ``[nova] initial_arq_max_age`` seconds after
their create.
"""

import threading

from oslo_log import log as logging

from accel_common import clients
from cyborg_lite import arq_states
from cyborg_lite.db import arq_reaper
from cyborg_lite.db import arqs as arq_db
from cyborg_lite.db import attach_handles as handle_db

LOG = logging.getLogger(__name__)

#: states of an ARQ Nova may forget: resolved (it read them as such).
RECLAIMABLE = arq_states.RESOLVED
COMPUTE_MICROVERSION = "2.1"


def _delete_of_instance(session, instance):
    """Delete the reclaimable ARQs still held by ``instance``.

    :returns: ``([(arq uuid, state, hostname, device_rp_uuid)], deployable
        ids)`` of the rows this call deleted (a concurrent delete leaves
        them out).
    """
    arqs = [a for a in arq_db.get_all(session, instance_uuid=instance)
            if a.state in RECLAIMABLE]
    handle_db.release(session, [a.id for a in arqs])
    gone = arq_db.delete_rows(session, [a.id for a in arqs])
    deleted = [a for a in arqs if a.id in gone]
    return ([(a.uuid, a.state, a.hostname, a.device_rp_uuid)
             for a in deleted],
            {a.deployable_id for a in deleted if a.deployable_id})


class Reclaimer:
    """The reclaim pass of one API process.

    :param conf: the API's ConfigOpts (``[nova]``).
    :param db: the :class:`~cyborg_lite.db.engine.Database`.
    :param locks: the process's
        :class:`~cyborg_lite.scheduling.locks.LockTraits` (None: none to
        write).
    """

    def __init__(self, conf, db, locks=None):
        self.conf = conf
        self.db = db
        self.locks = locks
        #: ARQs this process reclaimed since it started.
        self.reclaimed = 0
        self._after = ""
        self._lock = threading.Lock()
        self._compute = None

    @property
    def enabled(self):
        """True when ``[nova]`` says how to reach Nova and a pass is asked
        for."""
        return (clients.is_configured(self.conf, "nova")
                and self.conf.nova.reclaim_interval > 0)

    def _nova(self):
        if self._compute is None:
            self._compute = clients.adapter(self.conf, "nova")
        return self._compute

    def gone(self, instance):
        """True only when Nova answers 404 for ``instance``."""
        try:
            response = self._nova().get(
                f"/servers/{instance}", microversion=COMPUTE_MICROVERSION,
                raise_exc=False)
        except Exception as error:  # refused, timed out, auth failed, ...
            LOG.warning("Cannot ask Nova about instance %s (its ARQs are "
                        "kept): %s", instance, error)
            return False
        if response.status_code == 404:
            return True
        if response.status_code != 200:
            LOG.warning("Nova answered %d about instance %s (its ARQs are "
                        "kept)", response.status_code, instance)
        return False

    def sees_every_project(self):
        """True when Nova lists every project's servers to these
        credentials.

        A user who cannot (no admin role) gets 404 for another project's
        server that exists: without this check its ARQs would be reclaimed
        under it.
        """
        try:
            response = self._nova().get(
                "/servers?all_tenants=1&limit=1",
                microversion=COMPUTE_MICROVERSION, raise_exc=False)
        except Exception as error:
            LOG.warning("ARQ reclaim skipped, Nova cannot be reached: %s",
                        error)
            # NOTE(cyborg_lite): the next pass authenticates again: a token
            # taken before the catalog listed Nova never finds it.
            self._compute = None
            return False
        if response.status_code != 200:
            LOG.error("ARQ reclaim skipped: Nova answered %d to listing "
                      "every project's servers; the [nova] user needs the "
                      "admin role to tell a deleted server from another "
                      "project's", response.status_code)
            return False
        return True

    def reap_unclaimed(self):
        """Delete the ARQs Nova created and never learned of (see the
        module doc), ``[nova] reclaim_batch`` per transaction, one log line
        per batch.

        :returns: their uuids.
        """
        max_age = self.conf.nova.initial_arq_max_age
        batch = self.conf.nova.reclaim_batch
        reaped = []
        while max_age > 0:
            gone, looked_at = self.db.run(arq_reaper.reap, max_age, batch)
            if gone:
                LOG.warning("Deleted %d ARQ(s) created with a service token "
                            "and still Initial with no instance after %d s "
                            "(Nova never learned of them: most likely the "
                            "answer to its create was lost): %s", len(gone),
                            max_age, ", ".join(gone))
                reaped += gone
            if looked_at < batch or not gone:
                break
        return reaped

    def run_once(self):
        """One pass: the ARQs Nova never learned of deleted
        (:meth:`reap_unclaimed`), then up to ``[nova] reclaim_batch``
        instances looked up.

        :returns: the uuids of the ARQs deleted.
        """
        reaped = self.reap_unclaimed()
        batch = self.conf.nova.reclaim_batch
        with self._lock:
            after = self._after
        instances = arq_db.instances_in_states(self.db, RECLAIMABLE, after,
                                               batch)
        if instances and not self.sees_every_project():
            return reaped
        with self._lock:
            # NOTE(cyborg_lite): the next pass goes on after this batch, so
            # live instances early in uuid order never starve the others.
            self._after = instances[-1] if len(instances) == batch else ""
        reclaimed = []
        for instance in instances:
            if not self.gone(instance):
                continue
            deleted, regions = self.db.run(_delete_of_instance, instance)
            for uuid, state, host, rp in deleted:
                LOG.warning("Reclaimed ARQ %s (%s on host %s, provider %s) "
                            "of instance %s, which Nova no longer has: its "
                            "attach handle is free again", uuid, state, host,
                            rp, instance)
                reclaimed.append(uuid)
            if regions and self.locks is not None and self.locks.enabled:
                self.locks.sync(regions)
        if reclaimed:
            with self._lock:
                self.reclaimed += len(reclaimed)
                total = self.reclaimed
            LOG.warning("Reclaimed %d ARQ(s) of instances Nova no longer "
                        "has (%d since this process started)",
                        len(reclaimed), total)
        return reaped + reclaimed
