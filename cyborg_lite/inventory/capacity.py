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

"""Offer the attach handles learned in-band as Placement capacity.

The reporter (ironic_accel) writes ``total == max_unit ==`` 1 for a region
whose document lists no handles, and keeps an existing total while the
document still lists none. Once cyborg_lite's agent discovered the
region's handles, :func:`offer_handles` sets ``total`` and ``max_unit``
of the region's provider to the handle count, generation-checked, with
``reserved`` clamped to the new total. Never more: Placement must not offer
more of a region than cyborg_lite can bind. When more is allocated than
there are handles (an instance in ERROR keeps its allocation, a handle went
away), Placement is left over capacity, which it allows and which refuses
new allocations until enough are freed; keeping ``total`` at what was
allocated would offer a handle that does not exist once the allocation
without a handle is freed.
Providers the reporter has not created yet are left alone: their existence
is the reporter's.

A region's provider also gets the ``traits`` the document lists for it
(the host agent's, from the operator's device spec) and the class the
spec names (:func:`set_capacity` replaces the reporter's class then). A
NIC region's provider also gets the traits its handles give it
(:func:`accel_common.placement.tree.nic_traits`: ``CUSTOM_VF`` or
``CUSTOM_PF``, and ``CUSTOM_<PHYSNET>``), which the reporter cannot know
while the document lists no handles, so that a device profile written for
real Cyborg's NIC driver finds it.
"""

from oslo_log import log as logging

from accel_common import exception as common_exception
from accel_common import inventory
from accel_common.placement import tree
from cyborg_lite import exception

LOG = logging.getLogger(__name__)

UPDATED = "updated"
UNCHANGED = "unchanged"
#: The provider, or its inventory of the region's class, does not exist.
ABSENT = "absent"


def _wanted(record, count):
    total = count
    want = dict(record, total=total, max_unit=total)
    want["reserved"] = min(record.get("reserved", 0), total)
    return want


def set_capacity(client, rp_uuid, resource_class, count, retries=4):
    """Make ``rp_uuid`` offer ``count`` units of ``resource_class``; a
    provider with one other class gets this one instead.

    :param client: an :class:`accel_common.placement.client.Client`.
    :returns: :data:`UPDATED`, :data:`UNCHANGED` or :data:`ABSENT`.
    :raises CapacityError: after ``retries + 1`` generation conflicts.
    :raises accel_common.exception.PlacementError: any other
        refusal.
    """
    def write():
        try:
            generation, inventories = client.inventories(rp_uuid)
        except common_exception.PlacementError as exc:
            if exc.status == 404:
                return ABSENT
            raise
        record = inventories.get(resource_class)
        if record is None and len(inventories) != 1:
            return ABSENT
        if record is None:
            # NOTE(cyborg_lite): the operator's device spec names another
            # class than the reporter's; Placement refuses to drop the old
            # one while allocations use it (the next sync tries again).
            client.ensure_resource_class(resource_class)
            record, inventories = {}, {}
        want = _wanted(record, count)
        if all(record.get(k) == v for k, v in want.items()):
            return UNCHANGED
        used = client.usages(rp_uuid).get(resource_class, 0)
        if used > count:
            LOG.warning("Provider %s: %d %s allocated but %d attach "
                        "handle(s) found; it stays over capacity until "
                        "allocations are freed", rp_uuid, used,
                        resource_class, count)
        client.set_inventories(rp_uuid, generation,
                               dict(inventories, **{resource_class: want}))
        LOG.info("Provider %s: %s total %s -> %s (attach handles "
                 "discovered in-band)", rp_uuid, resource_class,
                 record.get("total"), want["total"])
        return UPDATED

    return client.retry_on_conflict(
        write, retries, rp_uuid, "its capacity was written",
        gave_up=_gave_up(rp_uuid, retries))


def set_region_traits(client, rp_uuid, traits, replaced=frozenset(),
                      retries=4):
    """Give ``rp_uuid`` ``traits``, keeping every other trait except those
    of ``replaced`` it is not given.

    :param client: an :class:`accel_common.placement.client.Client`.
    :param traits: the region's traits: the NIC traits of its handles
        (:func:`accel_common.placement.tree.nic_traits`), those of its
        device spec (the document's region ``traits``).
    :param replaced: traits that go when not in ``traits``
        (``tree.OWNED_TRAITS`` for a NIC: a ``CUSTOM_VF``/``CUSTOM_PF``
        its handles no longer give).
    :returns: :data:`UPDATED`, :data:`UNCHANGED` or :data:`ABSENT`.
    :raises CapacityError: after ``retries + 1`` generation conflicts.
    :raises accel_common.exception.PlacementError: any other refusal.
    """
    result = _rewrite_traits(
        client, rp_uuid,
        lambda current: (current - set(replaced)) | set(traits),
        "its traits were written", retries)
    if result == UPDATED:
        LOG.info("Provider %s: traits %s (found in-band)", rp_uuid,
                 ", ".join(sorted(traits)))
    return result


def remove_traits(client, rp_uuid, traits, retries=4):
    """Take ``traits`` off ``rp_uuid``, keeping every other trait.

    :returns: :data:`UPDATED`, :data:`UNCHANGED` or :data:`ABSENT`.
    :raises CapacityError: after ``retries + 1`` generation conflicts.
    :raises accel_common.exception.PlacementError: any other refusal.
    """
    result = _rewrite_traits(client, rp_uuid,
                             lambda current: current - set(traits),
                             "its traits were removed", retries)
    if result == UPDATED:
        LOG.info("Provider %s: traits %s removed (the region's handles "
                 "or device spec no longer give them)", rp_uuid,
                 ", ".join(sorted(traits)))
    return result


def _rewrite_traits(client, rp_uuid, rewrite, what, retries):
    """Write ``rewrite(current traits)`` as ``rp_uuid``'s traits when it
    differs, retried on generation conflicts.

    :returns: :data:`UPDATED`, :data:`UNCHANGED` or :data:`ABSENT`.
    """
    def write():
        try:
            generation, current = client.traits(rp_uuid)
        except common_exception.PlacementError as exc:
            if exc.status == 404:
                return ABSENT
            raise
        want = rewrite(set(current))
        if want == set(current):
            return UNCHANGED
        client.set_traits(rp_uuid, generation, want)
        return UPDATED

    return client.retry_on_conflict(
        write, retries, rp_uuid, what,
        gave_up=_gave_up(rp_uuid, retries))


def drop_physnets(client, summary):
    """Take the traits an applied document's regions left (physical
    networks, device spec traits: ``summary["physnets_left"]`` of
    :func:`cyborg_lite.inventory.apply.apply_document`) off their
    providers.

    :returns: ``{rp uuid: outcome}``, as :func:`offer_handles`.
    """
    outcomes = {}
    for rp_uuid, traits in summary.get("physnets_left", {}).items():
        try:
            outcomes[rp_uuid] = remove_traits(client, rp_uuid, traits)
        except (exception.CapacityError,
                common_exception.PlacementError) as exc:
            LOG.warning("Host %s: traits %s of provider %s not removed: "
                        "%s", summary.get("host"), ", ".join(traits),
                        rp_uuid, exc)
            outcomes[rp_uuid] = f"failed: {exc}"
    return outcomes


def _offer_region(client, device, region):
    outcome = set_capacity(client, region["rp_uuid"],
                           region["resource_class"],
                           len(region["attach_handles"]))
    traits = set(region.get("traits", []))
    replaced = frozenset()
    if device["type"] == "NIC":
        traits |= tree.nic_traits(device, region)
        replaced = tree.OWNED_TRAITS
    if outcome == ABSENT or not (traits or replaced):
        return outcome
    written = set_region_traits(client, region["rp_uuid"], traits, replaced)
    return UPDATED if UPDATED in (outcome, written) else outcome


def offer_handles(client, document, regions):
    """Set each listed region's capacity to its attach handle count (and
    a NIC region's traits to those its handles give it).

    :param client: an :class:`accel_common.placement.client.Client`.
    :param document: the inventory document with the discovered handles.
    :param regions: ``pci-address/region-id`` labels of the regions whose
        handles were learned in-band (see
        :func:`cyborg_lite.inventory.handle_discovery.fill_handles`).
    :returns: ``{rp uuid: outcome}``; an outcome is :data:`UPDATED`,
        :data:`UNCHANGED`, :data:`ABSENT` or ``"failed: <reason>"`` (the
        next sync tries again).
    """
    wanted = set(regions)
    outcomes = {}
    for device in document["devices"]:
        for region in device["regions"]:
            label = inventory.region_label(device, region)
            if label not in wanted or "attach_handles" not in region:
                continue
            try:
                outcomes[region["rp_uuid"]] = _offer_region(
                    client, device, region)
            except (exception.CapacityError,
                    common_exception.PlacementError) as exc:
                LOG.warning("Host %s: capacity of provider %s not set: %s",
                            document["host"], region["rp_uuid"], exc)
                outcomes[region["rp_uuid"]] = f"failed: {exc}"
    return outcomes


def _gave_up(rp_uuid, retries):
    return lambda conflict: exception.CapacityError(
        f"provider {rp_uuid} kept changing: gave up after {retries + 1} "
        f"attempts")
