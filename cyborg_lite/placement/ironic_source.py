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

"""Read the nodes' inventory documents from Ironic (DESIGN §3).

ironic_accel stores each node's document in ``node.extra["accelerators"]``;
cyborg_lite reads them through openstacksdk's baremetal proxy (option group
``[ironic]``) and feeds them to
:func:`cyborg_lite.inventory_sync.apply_document`. :func:`select_documents`
is the pure selection logic: which documents to use and why others are
skipped. With an agent client, :func:`sync` first completes documents
without attach handles from the host agents' in-band discovery.
"""

import dataclasses
import logging

from cyborg_lite.db import api as db_api
from cyborg_lite import handle_discovery
from cyborg_lite.placement import capacity
from cyborg_lite.programming import placement as prog_placement
from cyborg_lite.programming import programmer
from cyborg_lite.programming import regions
from ironic_accel import inventory
from ironic_accel.placement import client as placement_client

LOG = logging.getLogger(__name__)

#: Node fields fetched from Ironic; ``extra`` holds the document.
NODE_FIELDS = ("uuid", "name", "extra")


@dataclasses.dataclass
class Selection:
    """Documents to apply, and the nodes skipped with the reason."""

    documents: list = dataclasses.field(default_factory=list)
    skipped: dict = dataclasses.field(default_factory=dict)


def _field(node, name):
    if isinstance(node, dict):
        return node.get(name)
    return getattr(node, name, None)


def select_documents(nodes, host=None):
    """Pick the inventory documents to apply from Ironic nodes.

    A node without a document is skipped silently (it has no
    accelerators, or was never refreshed). A node whose document is
    invalid, or claims a host another node's document also claims, is
    skipped with the reason: a host is one node, and guessing which of two
    is right would move devices between them.

    :param nodes: nodes as openstacksdk returns them (or dicts).
    :param host: only documents of this host, when given.
    :returns: a :class:`Selection`.
    """
    selection = Selection()
    by_host = {}
    for node in nodes:
        node_uuid = _field(node, "id") or _field(node, "uuid")
        document = (_field(node, "extra") or {}).get(inventory.NODE_EXTRA_KEY)
        if not document:
            continue
        try:
            inventory.validate(document)
        except inventory.InvalidInventory as exc:
            selection.skipped[node_uuid] = f"invalid document: {exc}"
            continue
        if host is not None and document["host"] != host:
            continue
        by_host.setdefault(document["host"], []).append((node_uuid, document))
    for doc_host, found in sorted(by_host.items()):
        if len(found) > 1:
            names = ", ".join(sorted(n for n, _ in found))
            for node_uuid, _ in found:
                selection.skipped[node_uuid] = (
                    f"host {doc_host} is claimed by several nodes ({names}); "
                    "fix [ironic_accel] compute_host_source or the nodes")
            continue
        selection.documents.append(found[0][1])
    return selection


def fetch_nodes(conn):
    """Every node with the fields the selection needs.

    :param conn: an openstacksdk connection with the baremetal service.
    """
    # NOTE(accel): Ironic refuses ``fields`` on the detailed listing; the
    # plain listing with fields returns exactly these.
    return list(conn.baremetal.nodes(fields=list(NODE_FIELDS)))


def documents_from_ironic(conn, host=None):
    """:func:`select_documents` over the nodes Ironic has; logs skips."""
    selection = select_documents(fetch_nodes(conn), host=host)
    for node_uuid, reason in sorted(selection.skipped.items()):
        LOG.warning("Node %s: inventory document skipped: %s", node_uuid,
                    reason)
    return selection


def missing_providers(placement, document):
    """The document's region providers Placement does not have (yet).

    :param placement: an :class:`ironic_accel.placement.client.Client`.
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
    deployable = db_api.deployable_by_rp(session, rp_uuid)
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
    providers = prog_placement.RegionProviders(None, client=placement)
    for region in taken:
        try:
            providers.set_function_trait(region["rp_uuid"], region["trait"])
        except placement_client.PlacementError as error:
            LOG.error("Function trait %s of %s not written: %s",
                      region["trait"], region["rp_uuid"], error)
            db.run(_note_placement_failure, region["rp_uuid"],
                   region["function_id"],
                   f"{programmer.PLACEMENT_FAILED} {error}")


def sync(db, conn, host=None, apply_document=None, placement=None,
         agent_api=None, agent_host=None, offer_capacity=False):
    """Apply every selected node document to the database.

    :param db: a :class:`cyborg_lite.db.api.Database`.
    :param conn: an openstacksdk connection (``[ironic]``).
    :param host: only this host, when given.
    :param apply_document: the function applying one document;
        :func:`cyborg_lite.inventory_sync.apply_document` by default.
    :param placement: a Placement client; when given, the region providers
        not reported yet are listed (the documents are applied anyway: a
        bind to such a region waits for the reporter, the scheduler cannot
        pick it before), and regions whose function a document changed get
        their function trait (:func:`write_function_traits`).
    :param agent_api: a :class:`cyborg_lite.agent.rpcapi.AgentAPI`; when
        given, the regions a document lists without attach handles get
        the handles the host's agent discovers in-band
        (:func:`cyborg_lite.handle_discovery.fill_handles`).
    :param offer_capacity: with ``placement`` and ``agent_api``, the
        providers of the regions whose handles the agent supplied then
        offer that many units
        (:func:`cyborg_lite.placement.capacity.offer_handles`; the outcome
        is the host report's ``capacity``).
    :param agent_host: maps a document's host to the agent serving it
        (default: the same name).
    :returns: ``{"applied": [summary], "skipped": {node: reason},
        "not_in_placement": {host: [rp uuid]}}``, plus ``"handles":
        {host: report}`` when ``agent_api`` is given.
    """
    if apply_document is None:
        from cyborg_lite.inventory_sync import apply_document
    selection = documents_from_ironic(conn, host=host)
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
    if agent_api is not None:
        result["handles"] = handle_reports
    return result
