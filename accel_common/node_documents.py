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

"""Inventory documents as Ironic nodes carry them.

ironic_accel stores each node's document in ``node.extra["accelerators"]``
(:data:`accel_common.inventory.NODE_EXTRA_KEY`); whoever needs them reads
them through openstacksdk's baremetal proxy. :func:`select_documents` and
:func:`survey` are the pure selection logic: which documents to use and why
others are skipped.
"""

import dataclasses

from openstack import exceptions as sdk_exceptions
from oslo_log import log as logging

from accel_common import exception
from accel_common import inventory

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


@dataclasses.dataclass
class Survey:
    """Which node claims which host, and the nodes skipped with the reason.

    ``claims`` maps a host to the nodes whose document names it:
    ``[(node uuid, fingerprint, document or None)]`` (the document only
    when asked to keep it).
    """

    claims: dict = dataclasses.field(default_factory=dict)
    skipped: dict = dataclasses.field(default_factory=dict)

    def single(self):
        """``{host: (node uuid, fingerprint, document)}`` of the hosts one
        node claims; the nodes of a host several claim are skipped."""
        result = {}
        for doc_host, found in sorted(self.claims.items()):
            if len(found) == 1:
                result[doc_host] = found[0]
                continue
            names = ", ".join(sorted(n for n, _, _ in found))
            for node_uuid, _, _ in found:
                self.skipped[node_uuid] = (
                    f"host {doc_host} is claimed by several nodes ({names}); "
                    "fix [ironic_accel] compute_host_source or the nodes")
        return result


def survey(nodes, host=None, known=None, keep=False):
    """Who claims which host, one node at a time (``nodes`` may be a
    generator reading Ironic page by page).

    A node without a document is left out silently (it has no
    accelerators, or was never refreshed). An invalid document is skipped
    with the reason; a document whose fingerprint is in ``known`` (valid
    when it was applied) is not validated again.

    :param host: only documents of this host, when given.
    :param known: ``{host: fingerprint}`` of documents known to be valid.
    :param keep: keep the documents (else only their fingerprints, so a
        pass over a fleet holds no document longer than its page).
    :returns: a :class:`Survey`.
    """
    known = known or {}
    result = Survey()
    for node in nodes:
        node_uuid, document = document_of(node)
        if not document:
            continue
        fingerprint = inventory.fingerprint(document)
        doc_host = (document.get("host") if isinstance(document, dict)
                    else None)
        if host is not None and doc_host != host:
            continue  # NOTE(accel): another host's, valid or not
        if doc_host is None or known.get(doc_host) != fingerprint:
            try:
                inventory.validate(document)
            except exception.InvalidInventory as exc:
                result.skipped[node_uuid] = f"invalid document: {exc}"
                continue
        result.claims.setdefault(doc_host, []).append(
            (node_uuid, fingerprint, document if keep else None))
    return result


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
    found = survey(nodes, host=host, keep=True)
    single = found.single()
    return Selection(documents=[single[h][2] for h in sorted(single)],
                     skipped=found.skipped)


def fetch_nodes(conn):
    """Every node with the fields the selection needs.

    :param conn: an openstacksdk connection with the baremetal service.
    """
    # NOTE(accel): Ironic refuses ``fields`` on the detailed listing; the
    # plain listing with fields returns exactly these.
    return list(conn.baremetal.nodes(fields=list(NODE_FIELDS)))


def stream_nodes(conn, page_size):
    """The nodes, read from Ironic ``page_size`` at a time (a generator:
    openstacksdk follows Ironic's next links as it is consumed)."""
    return conn.baremetal.nodes(fields=list(NODE_FIELDS), limit=page_size)


def get_node(conn, node_uuid):
    """One node with the fields :func:`select_documents` needs, or None
    when it is gone."""
    try:
        return conn.baremetal.get_node(node_uuid, fields=list(NODE_FIELDS))
    except sdk_exceptions.NotFoundException:
        return None


def document_of(node):
    """``(node uuid, document or None)`` of a node."""
    node_uuid = _field(node, "id") or _field(node, "uuid")
    return node_uuid, (_field(node, "extra") or {}).get(
        inventory.NODE_EXTRA_KEY)


def documents_from_ironic(conn, host=None):
    """:func:`select_documents` over the nodes Ironic has; logs skips."""
    selection = select_documents(fetch_nodes(conn), host=host)
    for node_uuid, reason in sorted(selection.skipped.items()):
        LOG.warning("Node %s: inventory document skipped: %s", node_uuid,
                    reason)
    return selection
