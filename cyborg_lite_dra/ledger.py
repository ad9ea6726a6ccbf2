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

"""Placement as the one ledger of the node's accelerators, shared with
Nova (with ``[placement]`` set).

Nova's scheduler allocates a VM's units on a region's resource provider
(consumer: the instance); the plugin does the same for a claim before it
binds (consumer: the ResourceClaim's uid, consumer type
:data:`CONSUMER_TYPE`), so Placement refuses whichever of the two comes
second for the last unit, and GET /allocation_candidates stops offering a
unit a pod holds. The other way, :meth:`Ledger.free` reads what the
providers' other consumers (VMs) hold, so the slices stop offering what
VMs fill (:mod:`cyborg_lite_dra.slices`).

When the region a claim was allocated cannot serve it at bind time,
cyborg_lite binds it to a sibling region and moves its allocation there
(:mod:`cyborg_lite.scheduling.siblings`): the Kubernetes scheduler still
counts the claim's units on the device it allocated, so on the sibling
they are counted as other consumers' are.
"""

import logging
import threading

from accel_common import clients
from accel_common import exception as accel_exception
from accel_common.placement import client as placement_client

LOG = logging.getLogger(__name__)

#: The consumer type of a claim's allocations (Placement >= 1.38), which
#: tells them from Nova's (``INSTANCE``, ``MIGRATION``).
CONSUMER_TYPE = "DRA_CLAIM"
#: Writes tried again after a consumer or provider generation conflict.
RETRIES = 4


class LedgerError(Exception):
    """Placement refused or did not answer; the message says which and
    why."""


def project_of(namespace):
    """The Placement project of a claim's allocations: its namespace."""
    return f"k8s-namespace-{namespace}"[:255]


class Ledger:
    """The claims' allocations, and the units other consumers hold.

    :param conf: the plugin's ConfigOpts, ``[placement]`` configured.
    :param client: a :class:`accel_common.placement.client.Client`
        (built from ``[placement]`` on first use when None).
    :param known: optional ``known() -> {claim uid: provider uuids}``,
        the claims the plugin records (its checkpoint's) and the providers
        of the devices the scheduler allocated them: a claim's allocation
        on the node's providers without a record is logged as a leak, one
        on a provider it was not allocated (a sibling move) is counted as
        held by others.
    """

    def __init__(self, conf, client=None, known=None):
        self._conf = conf
        self._client = client
        self._known = known
        self._warned = set()
        self._user = f"k8s-dra-{conf.dra.driver_name}"[:255]
        self._lock = threading.Lock()
        #: consumer uuid -> consumer type (a consumer keeps its type).
        self._types = {}

    def _placement(self):
        with self._lock:
            if self._client is None:
                try:
                    self._client = placement_client.Client(
                        clients.connection(self._conf, "placement"))
                except Exception as error:
                    raise LedgerError(f"cannot reach Placement: {error}") \
                        from error
            return self._client

    def _call(self, what, func, *args):
        try:
            return func(*args)
        except accel_exception.PlacementError:
            raise
        except Exception as error:
            raise LedgerError(f"Placement did not answer {what}: {error}") \
                from error

    def hold(self, uid, namespace, units, describe):
        """Allocate ``units`` (``{rp uuid: {resource class: amount}}``)
        to claim ``uid``, unless it already holds allocations (an earlier
        attempt's, which cyborg_lite may have moved to a sibling region).

        :param describe: what the claim is, for the error.
        :raises LedgerError: Placement refused (capacity: VMs or other
            claims hold the units) or did not answer.
        """
        client = self._placement()
        for _ in range(RETRIES + 1):
            body = self._call("reading allocations",
                              client.consumer_allocations, uid)
            if body.get("allocations"):
                return
            put = {"allocations": {rp: {"resources": dict(resources)}
                                   for rp, resources in units.items()},
                   "consumer_generation": body.get("consumer_generation"),
                   "project_id": project_of(namespace),
                   "user_id": self._user,
                   "consumer_type": CONSUMER_TYPE}
            try:
                self._call("allocating", client.put_consumer_allocations,
                           uid, put)
                self._types[uid] = CONSUMER_TYPE
                LOG.info("Allocated %s in Placement for %s", units, describe)
                return
            except accel_exception.PlacementError as error:
                if error.is_conflict:
                    continue
                wanted = ", ".join(
                    f"{n} {rc} on {rp}" for rp, resources in sorted(
                        units.items()) for rc, n in sorted(resources.items()))
                why = ("VMs or other claims hold the units"
                       if error.status == 409 else
                       "is the node reported to this Placement?")
                raise LedgerError(
                    f"Placement refused to allocate {wanted} to {describe} "
                    f"({error.status}): {error}; {why}; the claim is not "
                    f"bound") from error
        raise LedgerError(f"Placement kept answering conflicts while "
                          f"allocating for {describe}")

    def release(self, uid):
        """Delete claim ``uid``'s allocations (none is fine).

        :raises LedgerError: Placement refused or did not answer.
        """
        client = self._placement()
        try:
            self._call("deleting allocations", client.request, "DELETE",
                       f"/allocations/{uid}", None, (204, 404))
        except accel_exception.PlacementError as error:
            raise LedgerError(f"Placement did not delete the allocations of "
                              f"claim {uid}: {error}") from error
        self._types.pop(uid, None)

    def _type(self, client, consumer):
        kind = self._types.get(consumer)
        if kind is None:
            body = client.consumer_allocations(consumer)
            kind = body.get("consumer_type") or ""
            if body.get("allocations"):
                self._types[consumer] = kind
        return kind

    def free(self, units):
        """``{rp uuid: units not held by other consumers than claims}``
        for ``units`` (``{rp uuid: resource class}``): the provider's
        ``total - reserved`` less what VMs (any consumer not of type
        :data:`CONSUMER_TYPE`) and claims moved there from the device
        the scheduler allocated them hold. A provider Placement does not
        have or that cannot be read is left out (nothing known of it)."""
        found = {}
        try:
            client = self._placement()
        except LedgerError as error:
            LOG.warning("%s", error)
            return found
        allocated = self._known() if self._known is not None else {}
        seen, claims = set(), set()
        for rp_uuid, rc in units.items():
            try:
                _, inventories = client.inventories(rp_uuid)
                record = inventories.get(rc)
                if record is None:
                    continue
                others = 0
                for consumer, held in client.allocations(rp_uuid).items():
                    seen.add(consumer)
                    amount = held.get("resources", {}).get(rc, 0)
                    if not amount:
                        continue
                    if self._type(client, consumer) == CONSUMER_TYPE:
                        claims.add(consumer)
                        if rp_uuid in allocated.get(consumer, (rp_uuid,)):
                            continue
                    others += amount
            except accel_exception.PlacementError as error:
                LOG.debug("No usage of %s: %s", rp_uuid, error)
                continue
            except Exception as error:
                LOG.warning("Reading the usage of %s: %s", rp_uuid, error)
                return found
            found[rp_uuid] = max(
                0, record["total"] - record.get("reserved", 0) - others)
        # NOTE(dra): VMs come and go; only the consumers still holding
        # units are remembered.
        self._types = {c: t for c, t in self._types.items() if c in seen}
        self._report_leaks(claims)
        return found

    def _report_leaks(self, claims):
        if self._known is None:
            return
        # NOTE(dra): read after the allocations: a claim's record is
        # written before its allocation and dropped after it.
        leaked = claims - set(self._known()) - self._warned
        for uid in sorted(leaked):
            LOG.warning("Placement holds units for claim %s, which this "
                        "plugin has no record of (checkpoint lost?): they "
                        "are freed when the kubelet unprepares it, or by "
                        "DELETE /allocations/%s", uid, uid)
        self._warned = (self._warned | leaked) & claims
