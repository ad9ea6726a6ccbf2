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

"""Inventory documents as Ironic nodes carry them (DESIGN §3).

ironic_accel stores each node's document in ``node.extra["accelerators"]``
(:data:`accel_common.inventory.NODE_EXTRA_KEY`); whoever needs them reads
them through openstacksdk's baremetal proxy. :func:`select_documents` is the
pure selection logic: which documents to use and why others are skipped.
"""

import dataclasses

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
        except exception.InvalidInventory as exc:
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
