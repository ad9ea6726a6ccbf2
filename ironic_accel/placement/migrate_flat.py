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

"""Move a host from the legacy flat model to nested providers.

See doc/source/architecture.rst, "Who owns what in Placement".

Early Cyborg put accelerator inventory and device traits on the compute-node
provider itself. :func:`plan` reads that and the host's inventory document
and works out the nested tree, which flat inventory goes to which region
provider, and where each consumer's accelerator allocation lands;
:func:`apply` carries the plan out:

1. create the missing region providers, empty (no inventory yet, so no
   capacity is counted twice);
2. one ``POST /reshaper`` (microversion 1.39) that removes the flat
   inventory from the compute node, gives each region its inventory and
   rewrites every affected consumer's allocations, atomically: no instance
   stops and no allocation is lost;
3. the reporter sets the regions' identity traits;
4. the flat device traits are removed from the compute node.

Every step is checked against what Placement holds, so running again after
a failure (or after success) finishes the job or does nothing. The plan
refuses, with a message naming the class and the numbers, when the flat
inventory does not match the document's regions.
"""

import collections
import dataclasses

from accel_common import inventory
from accel_common.placement import tree as tree_mod
from ironic_accel import exception as accel_exception
from ironic_accel.placement import reporter


@dataclasses.dataclass
class Plan:
    """What :func:`apply` will do; :meth:`describe` says it in words."""

    host: str
    root: dict
    tree: tree_mod.Tree
    document: dict
    #: region providers to create: [Provider]
    create: list = dataclasses.field(default_factory=list)
    #: resource classes moved off the compute node: {rc: flat inventory}
    moved: dict = dataclasses.field(default_factory=dict)
    #: flat class -> nested class, for every moved class
    rc_map: dict = dataclasses.field(default_factory=dict)
    #: {consumer: {"before": {rp: {rc: n}}, "after": {rp: {rc: n}},
    #:  "consumer": GET /allocations body}}
    consumers: dict = dataclasses.field(default_factory=dict)
    #: flat traits to remove from the compute node
    remove_traits: set = dataclasses.field(default_factory=set)
    #: consumers whose amount had to be split over several regions
    split: list = dataclasses.field(default_factory=list)

    @property
    def nothing_to_do(self):
        """True when the host is already nested."""
        return not (self.create or self.moved or self.remove_traits)

    def describe(self):
        """The plan as human-readable lines (the dry-run output)."""
        if self.nothing_to_do:
            return [f"{self.host}: already in the nested model; nothing to "
                    "change."]
        names = {p.uuid: p.name for p in self.tree.providers}
        names[self.root["uuid"]] = f"{self.host} (compute node)"
        lines = [f"Host {self.host} (compute node provider "
                 f"{self.root['uuid']}):"]
        for provider in self.create:
            lines.append(f"  create provider {provider.name} "
                         f"({provider.uuid}) for device "
                         f"{provider.device_id} region {provider.region_id}")
        for rc, record in sorted(self.moved.items()):
            nested_rc = self.rc_map[rc]
            targets = ", ".join(
                f"{p.name} {p.total}" for p in self.tree.providers
                if p.resource_class == nested_rc)
            renamed = f" (as {nested_rc})" if nested_rc != rc else ""
            lines.append(f"  move inventory {rc} total {record['total']}"
                         f"{renamed} from the compute node to: {targets}")
        for consumer, entry in sorted(self.consumers.items()):
            moves = []
            for rp, resources in sorted(entry["after"].items()):
                for rc, amount in sorted(resources.items()):
                    if rp in names and rp != self.root["uuid"]:
                        moves.append(f"{rc} {amount} -> {names.get(rp, rp)}")
            lines.append(f"  move allocation of consumer {consumer}: "
                         + "; ".join(moves))
        for consumer in self.split:
            lines.append(f"  NOTE: consumer {consumer} needed more than one "
                         "region's capacity; its allocation is split")
        if self.remove_traits:
            lines.append("  remove flat traits from the compute node: "
                         + ", ".join(sorted(self.remove_traits)))
        return lines


def _is_flat_trait(trait):
    return (tree_mod.is_owned_trait(trait)
            or trait.startswith(inventory.FUNCTION_TRAIT_PREFIX))


#: Resource classes early Cyborg and its drivers put on compute nodes. One of
#: these on the compute node that the document has no region for (and that
#: ``rc_map`` does not rename) makes the plan refuse rather than leave
#: accelerator inventory behind.
_FLAT_CLASSES = ("FPGA", "PGPU")
_FLAT_CLASS_PREFIXES = ("CUSTOM_ACCELERATOR", "CUSTOM_FPGA", "CUSTOM_GPU",
                        "CUSTOM_QAT", "CUSTOM_NIC", "CUSTOM_SSD",
                        "CUSTOM_PCI", "CUSTOM_NVME")


def _looks_flat(rc):
    return rc in _FLAT_CLASSES or rc.startswith(_FLAT_CLASS_PREFIXES)


def plan(client, document, rc_map=None):
    """Work out the migration of ``document["host"]`` (reads only).

    :param client: an :class:`accel_common.placement.client.Client`.
    :param document: the host's inventory document (the nested devices).
    :param rc_map: ``{flat class: nested class}`` for a compute node whose
        flat inventory used another class name than the document's (e.g.
        ``CUSTOM_ACCELERATOR_FPGA`` -> ``FPGA``); allocations are rewritten
        to the nested class.
    :raises ParentNotFound: no compute-node provider for the host.
    :raises MigrationRefused: the flat inventory does not match.
    :returns: a :class:`Plan`.
    """
    desired = tree_mod.desired_tree(document)
    root = client.provider_by_name(desired.host)
    if root is None:
        raise accel_exception.ParentNotFound(desired.host)
    rc_map = dict(rc_map or {})
    result = Plan(host=desired.host, root=root, tree=desired,
                  document=document)
    existing = {rp["uuid"]: rp for rp in client.tree(root["uuid"])}
    result.create = [p for p in desired.providers if p.uuid not in existing]

    _, root_inv = client.inventories(root["uuid"])
    _, root_traits = client.traits(root["uuid"])
    result.remove_traits = {t for t in root_traits if _is_flat_trait(t)}

    by_rc = collections.defaultdict(list)
    for provider in desired.providers:
        by_rc[provider.resource_class].append(provider)
    for rc, record in root_inv.items():
        nested_rc = rc_map.get(rc, rc)
        if nested_rc in by_rc:
            result.moved[rc] = record
            result.rc_map[rc] = nested_rc
        elif _looks_flat(rc) or rc in rc_map:
            raise accel_exception.MigrationRefused(
                f"{desired.host}: the compute node has accelerator "
                f"inventory {rc} total {record['total']} but the inventory "
                f"document has no region of class {nested_rc}; map it with "
                f"--map-resource-class {rc}=<class in the document> or "
                "refresh the node's inventory. Nothing was changed.")
    if len(set(result.rc_map.values())) != len(result.rc_map):
        raise accel_exception.MigrationRefused(
            f"{desired.host}: several flat classes map to one nested class "
            f"({result.rc_map}); nothing was changed.")
    for rc, record in result.moved.items():
        nested_rc = result.rc_map[rc]
        nested = sum(p.total for p in by_rc[nested_rc])
        if record["total"] != nested:
            regions = ", ".join(f"{p.device_id}/{p.region_id}: {p.total}"
                                for p in by_rc[nested_rc])
            raise accel_exception.MigrationRefused(
                f"{desired.host}: the compute node has {rc} total "
                f"{record['total']} but the inventory document has "
                f"{len(by_rc[nested_rc])} region(s) of {nested_rc} with "
                f"total {nested} ({regions}); refresh the node's inventory "
                "(or fix the flat inventory) so they match, then run "
                "again. Nothing was changed.")
    if result.moved:
        _plan_allocations(client, result, by_rc, existing)
    return result


def _used_on(client, rp_uuid, existing):
    if rp_uuid not in existing:
        return {}
    return client.request(
        "GET", f"/resource_providers/{rp_uuid}/usages")["usages"]


def _plan_allocations(client, result, by_rc, existing):
    """Place each consumer's flat accelerator amounts on region providers."""
    root_uuid = result.root["uuid"]
    free = {}
    for nested_rc in result.rc_map.values():
        for provider in by_rc[nested_rc]:
            used = _used_on(client, provider.uuid, existing).get(nested_rc, 0)
            free[(provider.uuid, nested_rc)] = provider.total - used
    flat = client.allocations(root_uuid)
    for consumer in sorted(flat):
        resources = flat[consumer]["resources"]
        if not any(rc in result.moved for rc in resources):
            continue
        body = client.request("GET", f"/allocations/{consumer}")
        before = {rp: dict(a["resources"])
                  for rp, a in body["allocations"].items()}
        after = {rp: dict(r) for rp, r in before.items()}
        for flat_rc in sorted(resources):
            if flat_rc not in result.moved:
                continue
            amount = after[root_uuid].pop(flat_rc)
            rc = result.rc_map[flat_rc]
            # NOTE(accel): a device profile group binds to one provider, so
            # the whole amount goes to one region when any can take it.
            whole = [p for p in by_rc[rc] if free[(p.uuid, rc)] >= amount]
            if whole:
                best = max(whole, key=lambda p: free[(p.uuid, rc)])
                parts = [(best, amount)]
            else:
                result.split.append(consumer)
                parts, left = [], amount
                for p in by_rc[rc]:
                    take = min(left, free[(p.uuid, rc)])
                    if take > 0:
                        parts.append((p, take))
                        left -= take
                if left:
                    raise accel_exception.MigrationRefused(
                        f"{result.host}: consumer {consumer} holds {amount} "
                        f"{rc} but the regions have only "
                        f"{amount - left} free; nothing was changed.")
            for provider, take in parts:
                free[(provider.uuid, rc)] -= take
                slot = after.setdefault(provider.uuid, {})
                slot[rc] = slot.get(rc, 0) + take
        if not after[root_uuid]:
            del after[root_uuid]
        result.consumers[consumer] = {"before": before, "after": after,
                                      "consumer": body}


def _reshape(client, result):
    root_uuid = result.root["uuid"]
    generation, root_inv = client.inventories(root_uuid)
    inventories = {root_uuid: {
        "resource_provider_generation": generation,
        "inventories": {rc: rec for rc, rec in root_inv.items()
                        if rc not in result.moved}}}
    for provider in result.tree.providers:
        if provider.resource_class not in result.rc_map.values():
            continue
        gen, current = client.inventories(provider.uuid)
        client.ensure_resource_class(provider.resource_class)
        inventories[provider.uuid] = {
            "resource_provider_generation": gen,
            "inventories": tree_mod.merge_inventory(current, provider)}
    allocations = {}
    for consumer, entry in result.consumers.items():
        body = entry["consumer"]
        allocations[consumer] = {
            "allocations": {rp: {"resources": r}
                            for rp, r in entry["after"].items()},
            "project_id": body["project_id"],
            "user_id": body["user_id"],
            "consumer_generation": body["consumer_generation"],
            "consumer_type": body.get("consumer_type") or "INSTANCE",
        }
    client.request("POST", "/reshaper", ok=(204,), json={
        "inventories": inventories, "allocations": allocations})


def _remove_flat_traits(client, result, retries=4):
    root_uuid = result.root["uuid"]

    def _apply():
        generation, traits = client.traits(root_uuid)
        keep = {t for t in traits if not _is_flat_trait(t)}
        if keep != traits:
            client.set_traits(root_uuid, generation, keep)

    client.retry_on_conflict(
        _apply, retries, root_uuid, "removing the flat traits",
        gave_up=lambda conflict: accel_exception.ReportError(
            f"{result.host}: the compute node kept changing while removing "
            "the flat traits; run again"))


def apply(client, result):
    """Carry out a :class:`Plan` (see the module docstring for the steps).

    :raises accel_common.exception.PlacementError: Placement refused
        a step (a concurrent change of a consumer or provider answers 409:
        plan again and re-run; the reshaper changed nothing then).
    :returns: the :class:`ironic_accel.placement.reporter.Result` of the
        final report.
    """
    root_uuid = result.root["uuid"]
    for provider in result.create:
        client.create_provider(provider.uuid, provider.name, root_uuid)
    if result.moved:
        _reshape(client, result)
    report = reporter.report(client, result.document)
    _remove_flat_traits(client, result)
    return report


def migrate(client, document, do_apply=False, rc_map=None):
    """Plan, and with ``do_apply`` carry out, the migration of one host.

    :param rc_map: see :func:`plan`.
    :returns: ``(plan, lines)``: the plan and what it printed.
    """
    result = plan(client, document, rc_map=rc_map)
    lines = result.describe()
    if do_apply and not result.nothing_to_do:
        apply(client, result)
        lines.append(f"{result.host}: migrated to the nested model.")
    elif not result.nothing_to_do:
        lines.append("Dry run: nothing was changed; add --apply to migrate.")
    return result, lines
