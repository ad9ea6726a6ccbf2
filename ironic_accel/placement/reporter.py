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

"""Report a node's accelerators to Placement from the desired tree.

:func:`report` computes the tree the document asks for
(:mod:`accel_common.placement.tree`), reads what Placement has, and writes
only the differences, each write generation-checked and retried after a
409 ``placement.concurrent_update``. A report with nothing changed only
reads. It writes only what the reporter owns (doc/source/architecture.rst,
"Who owns what in Placement"): provider existence, name, parent,
``total``/``max_unit`` and identity traits; never ``reserved`` (except for a
vanished device still in use) nor the function traits cyborg_lite set.

:func:`report_after_refresh` is what the inventory refresh calls;
:func:`report_nodes` is what the conductor periodic calls.
"""

import dataclasses
import threading

from oslo_log import log as logging

from accel_common import clients
from accel_common import exception as common_exception
from accel_common import inventory
from accel_common.placement import client as placement_client
from accel_common.placement import tree as tree_mod
from ironic_accel import conf as accel_conf
from ironic_accel import exception as accel_exception

LOG = logging.getLogger(__name__)


@dataclasses.dataclass
class Result:
    """What one report did; provider uuids per outcome."""

    host: str
    created: list = dataclasses.field(default_factory=list)
    updated: list = dataclasses.field(default_factory=list)
    unchanged: list = dataclasses.field(default_factory=list)
    deleted: list = dataclasses.field(default_factory=list)
    retired: list = dataclasses.field(default_factory=list)
    #: Providers under a held name: another provider, not the reporter's,
    #: has the name they are given once it is gone.
    held: list = dataclasses.field(default_factory=list)
    conflicts: int = 0
    reads: int = 0
    writes: int = 0


def report(client, document, retries=4):
    """Bring Placement in line with one inventory document.

    :param client: a :class:`accel_common.placement.client.Client`.
    :param document: the node's inventory document.
    :param retries: re-reads and retries of one provider after a generation
        conflict.
    :raises accel_common.exception.InvalidInventory: bad document.
    :raises ParentNotFound: no compute-node provider for the host.
    :raises FlatHost: the host still has the legacy flat inventory.
    :raises ReportError: a provider kept changing, or its name is taken by
        another of the reporter's providers (a name taken by a provider
        the reporter does not own is waited for: see :func:`_create`).
    :raises accel_common.exception.PlacementError: Placement refused
        a write for another reason (the message names the call).
    :returns: a :class:`Result`.
    """
    reads, writes = client.reads, client.writes
    conflicts = client.conflicts
    desired = tree_mod.desired_tree(document)
    result = Result(host=desired.host)
    root = client.provider_by_name(desired.host)
    if root is None:
        raise accel_exception.ParentNotFound(
            desired.host,
            source=_host_source())
    existing = {rp["uuid"]: rp for rp in client.tree(root["uuid"])}
    if any(p.uuid not in existing for p in desired.providers):
        _refuse_flat_host(client, root, desired)

    for provider in desired.providers:
        rp = existing.get(provider.uuid)
        if rp is None:
            created = _create(client, provider, root["uuid"], result)
            if created is not None:
                result.created.append(provider.uuid)
                _sync(client, provider, created, retries, fresh=True)
                continue
            rp = client.provider(provider.uuid)
        changed, rp = _place(client, provider, rp, root["uuid"], result)
        if _sync(client, provider, rp, retries) or changed:
            result.updated.append(provider.uuid)
        else:
            result.unchanged.append(provider.uuid)

    wanted = desired.by_uuid()
    for rp in existing.values():
        if (rp["uuid"] in wanted
                or rp["parent_provider_uuid"] != root["uuid"]
                or tree_mod.is_cyborg_provider(rp)):
            continue
        known = client.snapshot(rp["uuid"], rp["generation"])
        if known:
            traits = known[1]
        else:
            generation, traits = client.traits(rp["uuid"])
            client.remember(rp["uuid"], generation, None, traits)
        if "OWNER_CYBORG" not in traits:
            continue  # NOTE(accel): not ours (Nova vGPU, Neutron, ...).
        _vanished(client, rp, retries, result)

    result.reads = client.reads - reads
    result.writes = client.writes - writes
    result.conflicts = client.conflicts - conflicts
    LOG.debug("Placement report for %s: %s", desired.host, result)
    return result


def _refuse_flat_host(client, root, desired):
    """Raise FlatHost when the compute node has the document's classes.

    Checked only when providers are about to be created, so a host already
    nested pays nothing for it.
    """
    _, root_inv = client.inventories(root["uuid"])
    flat = set(root_inv) & {p.resource_class for p in desired.providers}
    if flat:
        raise accel_exception.FlatHost(desired.host, flat)


def _create(client, provider, parent_uuid, result):
    """Create the provider; None when its uuid already exists elsewhere.

    While a provider that is not the reporter's holds the name (real
    Cyborg's for the same card, until cyborg_lite adopts it), it is created
    under :func:`accel_common.placement.tree.held_name`; :func:`_place`
    gives it its name on the first report after the other one is gone.
    """
    name = provider.name
    for _ in range(3):
        try:
            return client.create_provider(provider.uuid, name, parent_uuid)
        except common_exception.PlacementError as exc:
            if exc.status != 409:
                raise
            if client.provider(provider.uuid) is not None:
                return None
            if name != provider.name:
                raise accel_exception.ReportError(
                    f"cannot create provider {provider.name!r} for device "
                    f"{provider.device_id} region {provider.region_id}: "
                    f"another provider already has that name and one has "
                    f"{name!r} too ({exc})") from exc
            holder = client.provider_by_name(provider.name)
            if holder is None:
                continue  # NOTE(accel): the holder was deleted meanwhile.
            _check_holder(client, provider, holder)
            name = tree_mod.held_name(provider.name)
            LOG.warning(
                "Provider %s (device %s region %s): the name %r belongs to "
                "provider %s, which is not ironic-accel's (real Cyborg's "
                "until cyborg_lite adopts the device); created as %r, "
                "renamed on the first report after that provider is gone",
                provider.uuid, provider.device_id, provider.region_id,
                provider.name, holder["uuid"], name)
            result.held.append(provider.uuid)
    raise accel_exception.ReportError(
        f"cannot create provider {provider.name!r} for device "
        f"{provider.device_id} region {provider.region_id}: its name kept "
        "being taken and released")


def _check_holder(client, provider, holder):
    """Raise ReportError unless ``holder``, which has the name
    ``provider`` wants, is a provider the reporter does not own."""
    if tree_mod.is_cyborg_provider(holder):
        return
    _, traits = client.traits(holder["uuid"])
    if tree_mod.is_foreign_provider(holder, traits):
        return
    raise accel_exception.ReportError(
        f"cannot name provider {provider.uuid} {provider.name!r} for "
        f"device {provider.device_id} region {provider.region_id}: "
        f"provider {holder['uuid']}, reported by ironic-accel for another "
        "node or device (it carries OWNER_CYBORG), already has that name; "
        "does another node report the same host?")


def _place(client, provider, rp, parent_uuid, result):
    """Fix name and parent of an existing provider.

    Its name stays as it is while a provider that is not the reporter's
    holds the wanted one (see :func:`_create`).

    :returns: ``(written, provider as Placement now has it)``.
    """
    name = provider.name
    if rp["name"] != name:
        holder = client.provider_by_name(name)
        if holder is not None:
            _check_holder(client, provider, holder)
            LOG.debug("Provider %s keeps the name %r: %s holds %r",
                      provider.uuid, rp["name"], holder["uuid"], name)
            name = rp["name"]
            result.held.append(provider.uuid)
    if (rp["name"] == name
            and rp["parent_provider_uuid"] == parent_uuid):
        return False, rp
    LOG.info("Provider %s: name %r -> %r, parent %s -> %s", provider.uuid,
             rp["name"], name, rp["parent_provider_uuid"],
             parent_uuid)
    return True, client.update_provider(provider.uuid, name, parent_uuid)


def _sync(client, provider, rp, retries, fresh=False):
    """Inventory and traits of one provider; True when anything was written.

    A provider just created is known to be empty; one whose generation
    still matches what this client last saw is known too: either is
    compared without reading it again.
    """
    wrote = False
    known = (({}, set()) if fresh
             else client.snapshot(provider.uuid, rp["generation"]))
    if known is not None and known[0] is None:
        known = None  # NOTE(accel): only its traits were seen.

    def write():
        nonlocal known, wrote
        if known is not None:
            generation = rp["generation"]
            current_inv, current_traits = known
            known = None
        else:
            generation, current_inv = client.inventories(provider.uuid)
            generation_t, current_traits = client.traits(provider.uuid)
            if generation_t != generation:
                return placement_client.REREAD
        revive = tree_mod.RETIRED_TRAIT in current_traits
        want_inv = tree_mod.merge_inventory(current_inv, provider, revive)
        want_traits = tree_mod.merge_traits(current_traits, provider)
        if not tree_mod.inventory_equal(current_inv, want_inv):
            client.ensure_resource_class(provider.resource_class)
            generation = client.set_inventories(
                provider.uuid, generation, want_inv)
            current_inv = want_inv
            wrote = True
        if want_traits != current_traits:
            generation = client.set_traits(
                provider.uuid, generation, want_traits)
            wrote = True
        client.remember(provider.uuid, generation, current_inv, want_traits)
        return wrote

    return client.retry_on_conflict(
        write, retries, provider.uuid, "being reported",
        gave_up=lambda conflict: accel_exception.ReportError(
            f"provider {provider.uuid} ({provider.name}) kept changing "
            f"under the reporter: gave up after {retries + 1} attempts"))


def _vanished(client, rp, retries, result):
    """A device left the document: delete its provider, or retire it."""
    rp_uuid = rp["uuid"]
    allocations = client.allocations(rp_uuid)
    if not allocations:
        try:
            client.delete_provider(rp_uuid)
            LOG.info("Provider %s (%s): device gone, provider deleted",
                     rp_uuid, rp["name"])
            result.deleted.append(rp_uuid)
            return
        except common_exception.PlacementError as exc:
            if exc.status != 409:
                raise
            allocations = client.allocations(rp_uuid)

    def retire():
        """Reserve it all and mark it retired; True when written."""
        generation, inventories = client.inventories(rp_uuid)
        generation_t, traits = client.traits(rp_uuid)
        if generation_t != generation:
            return placement_client.REREAD
        want_inv = {rc: dict(record, reserved=record["total"])
                    for rc, record in inventories.items()}
        want_traits = traits | {tree_mod.RETIRED_TRAIT}
        if want_inv == inventories and want_traits == traits:
            return False
        LOG.warning(
            "Provider %s (%s): its device vanished from the inventory but "
            "consumers %s still hold allocations on it; keeping it with "
            "reserved = total until they are gone (allocations are never "
            "deleted by the reporter)", rp_uuid, rp["name"],
            ", ".join(sorted(allocations)))
        if want_inv != inventories:
            generation = client.set_inventories(rp_uuid, generation, want_inv)
        if want_traits != traits:
            client.set_traits(rp_uuid, generation, want_traits)
        return True

    if client.retry_on_conflict(
            retire, retries, rp_uuid, "being retired",
            gave_up=lambda conflict: accel_exception.ReportError(
                f"provider {rp_uuid} kept changing while retiring it")):
        result.retired.append(rp_uuid)


def _host_source():
    """The configured compute_host_source, for error messages only."""
    try:
        return _ironic_conf().ironic_accel.compute_host_source
    except Exception:  # NOTE(accel): a message never fails the report.
        return None


def _ironic_conf():
    # NOTE(accel): Ironic's global CONF, imported on use: the reporter's
    # functions also serve ironic-accel-manage, which does not need Ironic.
    from ironic.conf import CONF

    if "accel_placement" not in CONF:
        accel_conf.register_opts(CONF)
    return CONF


#: One client per ConfigOpts, kept so its provider snapshots let a
#: no-change report skip re-reading providers.
_CLIENTS = {}
#: ConfigOpts already warned about a missing [placement] section.
_UNCONFIGURED_WARNED = set()


def _make_client(conf):
    if not conf.accel_placement.enabled:
        LOG.debug("[accel_placement] enabled is false: not reporting")
        return None
    if not clients.is_configured(conf, "placement"):
        # NOTE(ironic-accel): once per process and configuration, so an
        # operator who forgot [placement] sees it without a log flood.
        if id(conf) not in _UNCONFIGURED_WARNED:
            _UNCONFIGURED_WARNED.add(id(conf))
            LOG.warning("The [placement] section is missing or has no "
                        "auth_type/endpoint: accelerators are NOT reported "
                        "to Placement until it is configured (or set "
                        "[accel_placement] enabled = false to silence "
                        "this)")
        return None
    key = _client_key(conf)
    client = _CLIENTS.get(key)
    if client is None or client.conf is not conf:
        client = placement_client.Client(clients.connection(conf, "placement"))
        client.conf = conf
        _CLIENTS[key] = client
    return client


def _client_key(conf):
    """One cached client per ConfigOpts and per way of reaching Placement."""
    group = conf.placement
    settings = [id(conf), group.auth_type, group.endpoint_override]
    for name in ("endpoint", "auth_url", "username", "project_name"):
        try:
            settings.append(getattr(group, name))
        except Exception:  # NOTE(accel): the auth plugin lacks the option.
            settings.append(None)
    return tuple(settings)


def report_after_refresh(node, document, conf=None):
    """Report a node's freshly refreshed inventory document.

    A no-op (logged at debug) when ``[placement]`` is not configured or
    ``[accel_placement] enabled`` is false.

    :param node: the Ironic node (used for log messages).
    :param document: its inventory document.
    :param conf: a ConfigOpts; Ironic's global CONF by default.
    :raises: what :func:`report` raises; the caller logs it and the
        periodic retries.
    :returns: a :class:`Result`, or None when reporting is off.
    """
    conf = conf or _ironic_conf()
    client = _make_client(conf)
    if client is None:
        return None
    result = _report_remembered(getattr(node, "uuid", node), document,
                                conf, client)
    _log_result(getattr(node, "uuid", node), "reported", result)
    return result


#: node uuid -> (fingerprint of the document last reported, periodic
#: passes skipped since). Per conductor process: a restarted conductor
#: reports every node once in full.
_REPORTED = {}
_REPORTED_LOCK = threading.Lock()


def _report_remembered(node_uuid, document, conf, client):
    """:func:`report`, remembering the document once Placement has it; a
    failed report, or one that left a provider under a held name, leaves
    nothing remembered, so the next pass reports in full (and renames the
    provider as soon as the name is free)."""
    _remember(node_uuid, None)
    result = report(client, document,
                    retries=conf.accel_placement.conflict_retries)
    if not result.held:
        _remember(node_uuid, inventory.fingerprint(document))
    return result


def _log_result(node_uuid, verb, result):
    LOG.info("Node %s: accelerators %s to Placement under %s (created %d, "
             "updated %d, deleted %d, retired %d)", node_uuid, verb,
             result.host, len(result.created), len(result.updated),
             len(result.deleted), len(result.retired))


def _remember(node_uuid, print_):
    with _REPORTED_LOCK:
        if print_ is None:
            _REPORTED.pop(node_uuid, None)
        else:
            _REPORTED[node_uuid] = (print_, 0)


def _skip(node_uuid, print_, full_every):
    """True (and counted) when the node's last report is still current and
    no full pass is due."""
    with _REPORTED_LOCK:
        last = _REPORTED.get(node_uuid)
        if last is None or last[0] != print_ or last[1] + 1 >= full_every:
            return False
        _REPORTED[node_uuid] = (print_, last[1] + 1)
        return True


def forget_reports():
    """Forget what was reported (tests; a conductor restart does it)."""
    with _REPORTED_LOCK:
        _REPORTED.clear()


def report_periodic(node, document, conf=None, client=None):
    """The periodic's report of one node: nothing at all (no Placement
    request) when its document is the one this process last reported and
    no full pass is due (``[accel_placement] full_report_every``), else a
    full :func:`report`.

    :returns: a :class:`Result`, or None when skipped or reporting is off.
    :raises: what :func:`report` raises (the node is then reported in full
        on the next pass).
    """
    conf = conf or _ironic_conf()
    if _skip(node.uuid, inventory.fingerprint(document),
             conf.accel_placement.full_report_every):
        return None
    client = client or _make_client(conf)
    if client is None:
        return None
    result = _report_remembered(node.uuid, document, conf, client)
    if result.created or result.updated or result.deleted or (
            result.retired):
        _log_result(node.uuid, "re-reported", result)
    return result


def report_nodes(nodes, conf=None, client=None):
    """Re-report every node's stored document (the conductor periodic).

    Nodes without a document are skipped; one node's failure is logged and
    does not stop the others (the next run retries it).

    :param nodes: Ironic nodes (anything with ``uuid`` and ``extra``).
    :param conf: a ConfigOpts; Ironic's global CONF by default.
    :param client: a :class:`accel_common.placement.client.Client` to
        reuse; built from ``[placement]`` when omitted.
    :returns: ``{node uuid: Result or the exception}``; empty when
        reporting is off.
    """
    conf = conf or _ironic_conf()
    client = client or _make_client(conf)
    if client is None:
        return {}
    outcome = {}
    for node in nodes:
        document = (node.extra or {}).get(inventory.NODE_EXTRA_KEY)
        if not document:
            continue
        try:
            outcome[node.uuid] = report(
                client, document,
                retries=conf.accel_placement.conflict_retries)
        except Exception as exc:
            LOG.warning("Node %s: accelerator report to Placement failed, "
                        "retrying next period: %s", node.uuid, exc)
            outcome[node.uuid] = exc
    return outcome
