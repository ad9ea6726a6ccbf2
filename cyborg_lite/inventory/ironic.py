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

"""The inventory sync from Ironic.

The nodes' documents (:mod:`accel_common.node_documents`, read through
``[ironic]``) are completed with the attach handles the host agents
discover in-band (:mod:`.handle_discovery`), applied to the database
(:mod:`.apply`), and the capacity learned in-band is offered to Placement
(:mod:`.capacity`). :func:`sync_from_ironic` is what ``cyborg-lite-manage
inventory sync`` and the API's periodic pass (:mod:`.lease`) run.
"""

from oslo_log import log as logging

from accel_common import clients
from accel_common import exception as common_exception
from accel_common import inventory
from accel_common import node_documents
from accel_common.placement import client as placement_client
from cyborg_lite.cyborg_import import adopt
from cyborg_lite.db import deployables as deployable_db
from cyborg_lite.db import inventory_applied as applied_db
from cyborg_lite.inventory import apply
from cyborg_lite.inventory import capacity
from cyborg_lite.inventory import handle_discovery
from cyborg_lite.programming import providers as region_providers
from cyborg_lite.programming import regions

LOG = logging.getLogger(__name__)

#: nodes per Ironic request, when not configured (``[inventory]
#: page_size``).
DEFAULT_PAGE_SIZE = 500

#: What a sync that Ironic listed no node to says (the API's periodic
#: pass logs it, ``inventory sync`` prints it).
NO_NODES = (
    "Ironic listed no node at all to the [ironic] user. Either no node is "
    "enrolled yet, or that user cannot see the nodes: under Ironic's "
    "default policy a project-scoped user sees only the nodes its project "
    "owns, and nodes enrolled by a system-scoped administrator belong to "
    "no project. Give the user the reader role on the system and set "
    "[ironic] system_scope = all (instead of project_name), or set "
    "Ironic's [DEFAULT] rbac_service_role_elevated_access = true for a "
    "user with the service role in the service project. No document was "
    "applied; no bind can succeed until one is.")


def _counting(nodes, seen):
    for node in nodes:
        seen[0] += 1
        yield node


def missing_providers(placement, document):
    """The document's region providers Placement does not have (yet).

    :param placement: an :class:`accel_common.placement.client.Client`.
    :returns: a sorted list of rp uuids; all of them when the host's
        compute node is not in Placement.
    """
    wanted = {region["rp_uuid"] for device in document["devices"]
              for region in device["regions"]}
    root = placement.provider_by_name(document["host"])
    if root is None:
        return sorted(wanted)
    present = {rp["uuid"] for rp in placement.tree(root["uuid"])}
    return sorted(wanted - present)


def _note_placement_failure(session, rp_uuid, function_id, error):
    deployable = deployable_db.by_rp(session, rp_uuid)
    if deployable is not None:
        regions.note_placement(session, deployable.id, function_id, error)


def write_function_traits(db, placement, taken):
    """Give the regions whose function a document changed out of band
    (``functions_taken`` of an applied summary) their function trait.

    The reporter adds a document's function trait only to a provider that
    has none, so once cyborg_lite has programmed a region the trait would
    keep naming its old function. A failed write is left in the region's
    ``last_error`` for the reconciler to retry
    (:func:`cyborg_lite.programming.reconciler.retry_placement`).
    """
    providers = region_providers.RegionProviders(None, client=placement)
    for region in taken:
        try:
            providers.set_function_trait(region["rp_uuid"], region["trait"])
        except common_exception.PlacementError as error:
            LOG.error("Function trait %s of %s not written: %s",
                      region["trait"], region["rp_uuid"], error)
            db.run(_note_placement_failure, region["rp_uuid"],
                   region["function_id"],
                   f"{regions.PLACEMENT_FAILED} {error}")


def adopt_imported(db, placement, host=None):
    """Adopt the devices imported from Cyborg that a document now lists
    too (:func:`cyborg_lite.cyborg_import.adopt.adopt`); returns its
    lines, logged. A Placement refusal is logged and retried next pass."""
    try:
        lines = adopt.adopt(db, placement, host=host)
    except common_exception.PlacementError as error:
        lines = [f"adopting devices imported from Cyborg: {error}; "
                 "retried on the next sync"]
        LOG.error(lines[0])
        return lines
    for line in lines:
        LOG.info("Cyborg import: %s", line)
    return lines


def _to_apply(conn, todo, page_size):
    """``(node uuid, document)`` of the nodes in ``todo``: read one by one
    when they fit in a page, else in a second pass over the pages (memory
    stays one page)."""
    if len(todo) <= page_size:
        for node_uuid in sorted(todo):
            node = node_documents.get_node(conn, node_uuid)
            if node is not None:
                yield node_documents.document_of(node)
        return
    for node in node_documents.stream_nodes(conn, page_size):
        node_uuid, document = node_documents.document_of(node)
        if node_uuid in todo:
            yield node_uuid, document


def sync(db, conn, host=None, apply_document=None, placement=None,
         agent_api=None, agent_host=None, offer_capacity=False, full=True,
         page_size=DEFAULT_PAGE_SIZE):
    """Apply the selected node documents to the database.

    Ironic is read page by page and no document is kept past its page: a
    first pass notes which node claims which host and the fingerprint of
    its document; then the documents to apply are read again (one by one,
    or in a second pass when there are more than a page of them).

    :param db: a :class:`cyborg_lite.db.engine.Database`.
    :param conn: an openstacksdk connection (``[ironic]``).
    :param host: only this host, when given.
    :param apply_document: the function applying one document;
        :func:`cyborg_lite.inventory.apply.apply_document` by default.
    :param placement: a Placement client; when given, the region providers
        not reported yet are listed (the documents are applied anyway: a
        bind to such a region waits for the reporter, the scheduler cannot
        pick it before), regions whose function a document changed get
        their function trait (:func:`write_function_traits`), NIC regions
        lose the trait of a physical network their handles left
        (:func:`cyborg_lite.inventory.capacity.drop_physnets`); devices
        imported from Cyborg that a document lists too are adopted
        (:func:`adopt_imported`, its lines in ``"adopted"``).
    :param agent_api: a :class:`cyborg_lite.agent.rpcapi.AgentAPI`; when
        given, the regions a document lists without attach handles get
        the handles the host's agent discovers in-band
        (:func:`cyborg_lite.inventory.handle_discovery.fill_handles`).
    :param offer_capacity: with ``placement`` and ``agent_api``, the
        providers of the regions whose handles the agent supplied then
        offer that many units
        (:func:`cyborg_lite.inventory.capacity.offer_handles`; the outcome
        is the host report's ``capacity``).
    :param agent_host: maps a document's host to the agent serving it
        (default: the same name).
    :param full: apply every document; else only those whose fingerprint
        differs from the one last applied for their host (the others are
        counted in ``"unchanged"``, nothing is written for them).
    :param page_size: nodes per Ironic request.
    :returns: ``{"applied": [summary], "skipped": {node: reason},
        "not_in_placement": {host: [rp uuid]}, "unchanged": n,
        "nodes": n}`` (``nodes``: how many nodes Ironic listed, whatever
        their documents), plus ``"handles": {host: report}`` when
        ``agent_api`` is given.
    """
    apply_document = apply_document or apply.apply_document
    known = applied_db.known(db)
    seen = [0]
    found = node_documents.survey(
        _counting(node_documents.stream_nodes(conn, page_size), seen),
        host=host, known=known)
    claimed = found.single()
    for node_uuid, reason in sorted(found.skipped.items()):
        LOG.warning("Node %s: inventory document skipped: %s", node_uuid,
                    reason)
    todo = {node: (doc_host, fingerprint)
            for doc_host, (node, fingerprint, _) in claimed.items()
            if full or known.get(doc_host) != fingerprint}
    applied, missing, handle_reports = [], {}, {}
    for node_uuid, document in _to_apply(conn, todo, page_size):
        doc_host, fingerprint = todo[node_uuid]
        if not document or document.get("host") != doc_host:
            LOG.info("Node %s: its inventory document changed during the "
                     "sync; it is applied on the next", node_uuid)
            continue
        fingerprint = inventory.fingerprint(document)
        report = None
        if agent_api is not None:
            server = agent_host(doc_host) if agent_host else None
            document, report = handle_discovery.fill_handles(
                document, agent_api, agent_host=server)
            handle_reports[doc_host] = report
        summary = apply_document(db, document)
        applied.append(summary)
        if placement is not None and summary.get("functions_taken"):
            write_function_traits(db, placement, summary["functions_taken"])
        if placement is not None and summary.get("physnets_left"):
            capacity.drop_physnets(placement, summary)
        if offer_capacity and placement is not None and \
                report is not None and report["filled"]:
            report["capacity"] = capacity.offer_handles(
                placement, document, report["filled"])
        if placement is not None:
            absent = missing_providers(placement, document)
            if absent:
                LOG.warning("Host %s: %d region provider(s) not in "
                            "Placement yet: %s", doc_host, len(absent),
                            ", ".join(absent))
                missing[doc_host] = absent
        # NOTE(cyborg_lite): a host whose agent could not be asked is not
        # remembered: the next pass asks it again.
        if report is None or not report["error"]:
            applied_db.record(db, doc_host, node_uuid, fingerprint)
    if full and host is None:
        applied_db.forget_except(db, found.claims)
    result = {"applied": applied, "skipped": found.skipped,
              "not_in_placement": missing,
              "unchanged": len(claimed) - len(todo), "nodes": seen[0]}
    if placement is not None:
        result["adopted"] = adopt_imported(db, placement, host)
    if agent_api is not None:
        result["handles"] = handle_reports
    return result


def _handles_line(host, report):
    if report["source"] == handle_discovery.DOCUMENT:
        return f"{host}: attach handles from the inventory document"
    if report["source"] == handle_discovery.AGENT:
        line = (f"{host}: attach handles from the agent for "
                f"{len(report['filled'])} region(s)")
        if report["kept"]:
            line += (f"; known handles kept for {len(report['kept'])} "
                     f"region(s) the agent reported none for")
    else:
        line = (f"{host}: known attach handles kept for "
                f"{len(report['kept'])} region(s)")
        line += (f": {report['error']}" if report["error"]
                 else ": the agent reported none")
    if report["unmatched"]:
        line += ("; ignored devices the document does not list: "
                 + ", ".join(report["unmatched"]))
    if report.get("incomplete"):
        line += ("; no PCI address yet for: "
                 + ", ".join(sorted(report["incomplete"])))
    return line


def sync_from_ironic(conf, db, programmer, host=None, full=True,
                     log_no_nodes=True):
    """Apply the Ironic nodes' documents to ``db`` (all hosts, or ``host``).

    What ``inventory sync`` and the API's periodic sync both run: attach
    handles a document lacks come from the agent serving the host (through
    ``programmer``), and Placement (``[placement]``, when configured) is
    offered the capacity.

    :param full: apply every document, not only the changed ones (see
        :func:`sync`).
    :param log_no_nodes: log :data:`NO_NODES` as a warning when Ironic
        listed no node (``inventory sync`` prints it instead).

    :returns: :func:`sync`'s result.
    :raises ValueError: ``[ironic]`` is not configured.
    """
    if not clients.is_configured(conf, "ironic"):
        raise ValueError("[ironic] is not configured")
    placement = None
    if clients.is_configured(conf, "placement"):
        placement = placement_client.Client(
            clients.connection(conf, "placement"))
    # NOTE(accel): the programmer knows which agent serves a host (the
    # embedded one with the in-process transport, else the host's own).
    result = sync(db, clients.connection(conf, "ironic"), host=host,
                  placement=placement, agent_api=programmer.agent_api(),
                  agent_host=programmer.agent_host, offer_capacity=True,
                  full=full, page_size=conf.inventory.page_size)
    if log_no_nodes and not result["nodes"]:
        LOG.warning("Inventory sync: %s", NO_NODES)
    return result


def sync_problems(result):
    """True when a node was skipped or a host's agent could not be asked."""
    return bool(result["skipped"]
                or any(r["error"] for r in result["handles"].values()))


def handles_lines(result):
    """One line per host saying where its attach handles came from."""
    return [_handles_line(host, report)
            for host, report in sorted(result["handles"].items())]
