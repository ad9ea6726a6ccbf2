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

"""Placement calls through openstacksdk, at one fixed microversion.

openstacksdk's placement resources cap their microversions below what this
project needs (``reserved`` needs 1.26, re-parenting 1.37, reshaper 1.30,
the 409 error codes 1.23), so every call goes through the proxy's raw
``get/put/post/delete`` at :data:`MICROVERSION`. The client counts its calls
(``reads``/``writes``) so callers and tests can prove a no-change report
writes nothing. :meth:`Client.retry_on_conflict` is the one "read, change,
write with the generation read, again after a 409
``placement.concurrent_update``" loop every writer of providers uses.
"""

import collections

from oslo_log import log as logging

from accel_common import exception

LOG = logging.getLogger(__name__)

#: Every call uses this Placement microversion (Placement 16 serves 1.39).
MICROVERSION = "1.39"

INVENTORY_IN_USE = "placement.inventory.inuse"

#: What a :meth:`Client.retry_on_conflict` attempt returns to be called
#: again without having written (its reads saw different generations).
REREAD = object()


class Client:
    """Raw Placement calls at :data:`MICROVERSION`, counted.

    :param conn: an openstacksdk connection (``conn.placement`` is used).
    """

    def __init__(self, conn):
        self.conn = conn
        self.conf = None
        self.calls = collections.Counter()
        #: Generation conflicts met by :meth:`retry_on_conflict`.
        self.conflicts = 0
        #: ``(method, url)`` of the latest writes, oldest first (bounded: a
        #: conductor keeps its client for its whole life).
        self.write_log = collections.deque(maxlen=1000)
        #: Custom traits and resource classes known to exist, so a report
        #: creates each at most once per client.
        self.known_traits = set()
        self.known_resource_classes = set()
        #: ``{rp uuid: (generation, inventories, traits)}`` as last read or
        #: written by this client. Only a hint: used when the provider's
        #: generation (from a tree listing) still matches, which Placement
        #: bumps on every change of inventory, traits or allocations.
        self.snapshots = {}

    @property
    def reads(self):
        """How many GETs this client sent."""
        return self.calls["GET"]

    @property
    def writes(self):
        """How many PUT/POST/DELETE calls this client sent."""
        return sum(n for m, n in self.calls.items() if m != "GET")

    def request(self, method, url, json=None, ok=(200,), params=None):
        """One call; returns the decoded body (or None) on an ``ok`` status.

        :raises PlacementError: on any other status.
        """
        self.calls[method] += 1
        if method != "GET":
            self.write_log.append((method, url))
        kwargs = {"microversion": MICROVERSION}
        if json is not None:
            kwargs["json"] = json
        if params is not None:
            kwargs["params"] = params
        response = getattr(self.conn.placement, method.lower())(url, **kwargs)
        if response.status_code not in ok:
            raise exception.PlacementError(method, url, response)
        if response.status_code == 204 or not response.content:
            return None
        return response.json()

    def retry_on_conflict(self, func, retries, rp_uuid, what, gave_up):
        """Call ``func()`` until it returns, again after each generation
        conflict.

        ``func`` reads what it changes and writes it with the generation it
        read, so each call starts from what Placement has now. It returns
        :data:`REREAD` when its reads disagree (the provider changed between
        them); that uses up an attempt as a conflict does.

        :param func: one attempt; its result is returned.
        :param retries: calls after the first one.
        :param rp_uuid: the provider written, for the log.
        :param what: what is done to it, for the log ("Provider <uuid>
            changed while <what>").
        :param gave_up: called with the last conflict (a
            :class:`PlacementError`, or None when only re-reads happened)
            after ``retries + 1`` attempts; returns the exception to raise.
        :raises PlacementError: any refusal other than a conflict, at once.
        """
        conflict = None
        for attempt in range(1, retries + 2):
            try:
                outcome = func()
            except exception.PlacementError as error:
                if not error.is_conflict:
                    raise
                conflict = error
                self.conflicts += 1
                LOG.info("Provider %s changed while %s (attempt %d of %d)",
                         rp_uuid, what, attempt, retries + 1)
                continue
            if outcome is not REREAD:
                return outcome
        raise gave_up(conflict)

    # Providers

    def provider_by_name(self, name):
        """The provider named ``name``, or None."""
        found = self.request("GET", "/resource_providers",
                             params={"name": name})["resource_providers"]
        return found[0] if found else None

    def provider(self, rp_uuid):
        """The provider ``rp_uuid``, or None."""
        try:
            return self.request("GET", f"/resource_providers/{rp_uuid}")
        except exception.PlacementError as exc:
            if exc.status == 404:
                return None
            raise

    def tree(self, root_uuid):
        """Every provider in the tree rooted at ``root_uuid``."""
        return self.request("GET", "/resource_providers",
                            params={"in_tree": root_uuid}
                            )["resource_providers"]

    def create_provider(self, rp_uuid, name, parent_uuid):
        """Create a provider; returns it (generation 0)."""
        return self.request("POST", "/resource_providers", json={
            "uuid": rp_uuid, "name": name,
            "parent_provider_uuid": parent_uuid})

    def update_provider(self, rp_uuid, name, parent_uuid):
        """Rename and/or re-parent a provider (re-parenting needs 1.37)."""
        return self.request("PUT", f"/resource_providers/{rp_uuid}", json={
            "name": name, "parent_provider_uuid": parent_uuid})

    def delete_provider(self, rp_uuid):
        """Delete a provider (Placement refuses while it has allocations)."""
        self.request("DELETE", f"/resource_providers/{rp_uuid}", ok=(204,))
        self.snapshots.pop(rp_uuid, None)

    # Inventories, traits, allocations

    def snapshot(self, rp_uuid, generation):
        """``(inventories, traits)`` remembered at ``generation``, or None."""
        known = self.snapshots.get(rp_uuid)
        if known is not None and known[0] == generation:
            return known[1], known[2]
        return None

    def remember(self, rp_uuid, generation, inventories, traits):
        """Record a provider's state at ``generation``."""
        self.snapshots[rp_uuid] = (generation, inventories, set(traits))

    def inventories(self, rp_uuid):
        """``(generation, {rc: inventory})`` of a provider."""
        body = self.request("GET",
                            f"/resource_providers/{rp_uuid}/inventories")
        return body["resource_provider_generation"], body["inventories"]

    def set_inventories(self, rp_uuid, generation, inventories):
        """Replace all inventories; returns the new generation."""
        try:
            body = self.request(
                "PUT", f"/resource_providers/{rp_uuid}/inventories",
                json={"resource_provider_generation": generation,
                      "inventories": inventories})
        except exception.PlacementError:
            self.snapshots.pop(rp_uuid, None)
            raise
        return body["resource_provider_generation"]

    def traits(self, rp_uuid):
        """``(generation, set of traits)`` of a provider."""
        body = self.request("GET", f"/resource_providers/{rp_uuid}/traits")
        return body["resource_provider_generation"], set(body["traits"])

    def set_traits(self, rp_uuid, generation, traits):
        """Replace all traits; returns the new generation."""
        self.ensure_traits(traits)
        try:
            body = self.request(
                "PUT", f"/resource_providers/{rp_uuid}/traits",
                json={"resource_provider_generation": generation,
                      "traits": sorted(traits)})
        except exception.PlacementError:
            self.snapshots.pop(rp_uuid, None)
            raise
        return body["resource_provider_generation"]

    def allocations(self, rp_uuid):
        """``{consumer uuid: {"resources": {...}}}`` on a provider."""
        return self.request(
            "GET", f"/resource_providers/{rp_uuid}/allocations")["allocations"]

    def usages(self, rp_uuid):
        """``{rc: amount}`` allocated on a provider."""
        return self.request(
            "GET", f"/resource_providers/{rp_uuid}/usages")["usages"]

    def candidates(self, params):
        """``GET /allocation_candidates`` with ``params``; the answer's
        ``allocation_requests`` and ``provider_summaries``."""
        return self.request("GET", "/allocation_candidates", params=params)

    def consumer_allocations(self, consumer):
        """A consumer's allocations as ``PUT /allocations`` takes them
        back: ``allocations``, ``consumer_generation``, ``project_id``,
        ``user_id`` (and ``consumer_type``)."""
        return self.request("GET", f"/allocations/{consumer}")

    def put_consumer_allocations(self, consumer, body):
        """Replace a consumer's allocations (consumer-generation checked:
        a concurrent change answers ``placement.concurrent_update``)."""
        self.request("PUT", f"/allocations/{consumer}", json=body,
                     ok=(204,))

    def ensure_traits(self, traits):
        """Create the custom traits Placement may not know yet."""
        for trait in sorted(traits):
            if trait.startswith("CUSTOM_") and trait not in self.known_traits:
                self.request("PUT", f"/traits/{trait}", ok=(201, 204))
                self.known_traits.add(trait)

    def ensure_resource_class(self, name):
        """Create a custom resource class Placement may not know yet."""
        if name.startswith("CUSTOM_") and (
                name not in self.known_resource_classes):
            self.request("PUT", f"/resource_classes/{name}", ok=(201, 204))
            self.known_resource_classes.add(name)
