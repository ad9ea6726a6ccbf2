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

"""The inventory sync from Ironic (DESIGN §3).

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
from accel_common import node_documents
from accel_common.placement import client as placement_client
from cyborg_lite.cyborg_import import adopt
from cyborg_lite.db import deployables as deployable_db
from cyborg_lite.inventory import apply
from cyborg_lite.inventory import capacity
from cyborg_lite.inventory import handle_discovery
from cyborg_lite.programming import providers as region_providers
from cyborg_lite.programming import regions

LOG = logging.getLogger(__name__)


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


def sync(db, conn, host=None, apply_document=None, placement=None,
         agent_api=None, agent_host=None, offer_capacity=False):
    """Apply every selected node document to the database.

    :param db: a :class:`cyborg_lite.db.engine.Database`.
    :param conn: an openstacksdk connection (``[ironic]``).
    :param host: only this host, when given.
    :param apply_document: the function applying one document;
        :func:`cyborg_lite.inventory.apply.apply_document` by default.
    :param placement: a Placement client; when given, the region providers
        not reported yet are listed (the documents are applied anyway: a
        bind to such a region waits for the reporter, the scheduler cannot
        pick it before), and regions whose function a document changed get
        their function trait (:func:`write_function_traits`); devices
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
    :returns: ``{"applied": [summary], "skipped": {node: reason},
        "not_in_placement": {host: [rp uuid]}}``, plus ``"handles":
        {host: report}`` when ``agent_api`` is given.
    """
    apply_document = apply_document or apply.apply_document
    selection = node_documents.documents_from_ironic(conn, host=host)
    applied, missing, handle_reports = [], {}, {}
    for document in selection.documents:
        if agent_api is not None:
            server = agent_host(document["host"]) if agent_host else None
            document, report = handle_discovery.fill_handles(
                document, agent_api, agent_host=server)
            handle_reports[document["host"]] = report
        summary = apply_document(db, document)
        applied.append(summary)
        if placement is not None and summary.get("functions_taken"):
            write_function_traits(db, placement, summary["functions_taken"])
        if offer_capacity and placement is not None and \
                agent_api is not None and report["filled"]:
            report["capacity"] = capacity.offer_handles(
                placement, document, report["filled"])
        if placement is not None:
            absent = missing_providers(placement, document)
            if absent:
                LOG.warning("Host %s: %d region provider(s) not in "
                            "Placement yet: %s", document["host"],
                            len(absent), ", ".join(absent))
                missing[document["host"]] = absent
    result = {"applied": applied, "skipped": selection.skipped,
              "not_in_placement": missing}
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


def sync_from_ironic(conf, db, programmer, host=None):
    """Apply the Ironic nodes' documents to ``db`` (all hosts, or ``host``).

    What ``inventory sync`` and the API's periodic sync both run: attach
    handles a document lacks come from the agent serving the host (through
    ``programmer``), and Placement (``[placement]``, when configured) is
    offered the capacity.

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
    return sync(db, clients.connection(conf, "ironic"),
                              host=host, placement=placement,
                              agent_api=programmer.agent_api(),
                              agent_host=programmer.agent_host,
                              offer_capacity=True)


def sync_problems(result):
    """True when a node was skipped or a host's agent could not be asked."""
    return bool(result["skipped"]
                or any(r["error"] for r in result["handles"].values()))


def handles_lines(result):
    """One line per host saying where its attach handles came from."""
    return [_handles_line(host, report)
            for host, report in sorted(result["handles"].items())]
