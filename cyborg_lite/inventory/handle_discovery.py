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

"""Attach handles for inventory documents that carry none (DESIGN §2, §3).

Out of band (Ironic, via the BMC) a document usually lists devices and
regions but no attach handles: VF BDFs exist only once the host enabled
SR-IOV. :func:`fill_handles` asks the agent of the document's host
(``discover``, bounded by ``[agent] rpc_timeout`` and ``rpc_retry``) and
merges its answer, matched by PF PCI address
(:func:`cyborg_lite.agent.handles.merge_discovered`).

Handles a document lists win over the agent's. A region still without an
``attach_handles`` key after this means "handles unknown":
:func:`cyborg_lite.inventory_apply.apply_document` then keeps the handles
the database already has for it, so an unreachable agent never wipes
them.
"""

import copy

from oslo_log import log as logging

from accel_common import exception as common_exception
from accel_common import inventory
from cyborg_lite.agent import exception as agent_exception
from cyborg_lite.agent import handles

LOG = logging.getLogger(__name__)

#: Every region's handles came from the document; the agent was not asked.
DOCUMENT = "document"
#: The agent's in-band discovery supplied handles for at least one region.
AGENT = "agent"
#: No new handles: the ones the database knows for those regions are kept.
KEPT = "kept"


def _label(device, region):
    return f"{device['pci_address'].lower()}/{region['id']}"


def regions_without_handles(document):
    """Regions of ``document`` with no ``attach_handles`` key.

    :returns: ``device-pci-address/region-id`` labels, in document order.
    """
    return [_label(device, region) for device in document["devices"]
            for region in device["regions"]
            if "attach_handles" not in region]


def _keep_document_handles(document, merged):
    """``merged`` with the handles the document listed put back."""
    result = copy.deepcopy(merged)
    listed = {_label(d, r): r["attach_handles"]
              for d in document["devices"] for r in d["regions"]
              if "attach_handles" in r}
    for device in result["devices"]:
        for region in device["regions"]:
            label = _label(device, region)
            if label in listed:
                region["attach_handles"] = copy.deepcopy(listed[label])
    return inventory.validate(result)


def fill_handles(document, agent_api, agent_host=None):
    """``document`` with the attach handles its host's agent discovered.

    Never raises for an agent problem: the agent being unreachable, timing
    out or answering something that does not fit the document is logged
    and reported, and the document is returned as it was (its regions
    without handles then keep the handles already known).

    :param document: a valid inventory document.
    :param agent_api: a :class:`cyborg_lite.agent.rpcapi.AgentAPI`.
    :param agent_host: the agent (RPC server) serving ``document["host"]``
        when it is not that name (the embedded agent serves under its own
        ``[agent] host``).
    :returns: ``(document, report)``; ``report`` has ``source``
        (:data:`DOCUMENT`, :data:`AGENT` or :data:`KEPT`), ``filled`` (the
        regions the agent supplied), ``kept`` (regions left without new
        handles), ``unmatched`` (PCI addresses the agent found that the
        document does not list; not added) and ``error`` (why the agent
        gave nothing, or None).
    """
    host = document["host"]
    missing = regions_without_handles(document)
    report = {"source": DOCUMENT, "filled": [], "kept": [], "unmatched": [],
              "error": None}
    if not missing:
        return document, report
    server = agent_host or host
    report.update(source=KEPT, kept=missing)
    try:
        discovered = agent_api.discover(server)["devices"]
        merged, unmatched = handles.merge_discovered(document, discovered)
        merged = _keep_document_handles(document, merged)
    except agent_exception.AgentError as exc:
        report["error"] = str(exc)
    except (common_exception.InvalidInventory, KeyError, TypeError,
            AttributeError) as exc:
        report["error"] = (f"the answer of agent {server} does not fit the "
                           f"document: {exc}")
    if report["error"]:
        LOG.warning("Host %s: attach handles not discovered, the handles "
                    "already known for %d region(s) are kept: %s", host,
                    len(missing), report["error"])
        return document, report
    if unmatched:
        LOG.warning("Host %s: agent %s found device(s) %s that the "
                    "inventory document does not list; they are ignored",
                    host, server, ", ".join(unmatched))
    still = regions_without_handles(merged)
    report.update(filled=[r for r in missing if r not in still],
                  kept=still, unmatched=unmatched)
    if report["filled"]:
        report["source"] = AGENT
    if still:
        LOG.warning("Host %s: agent %s reported no attach handles for "
                    "region(s) %s; the handles already known are kept",
                    host, server, ", ".join(still))
    return merged, report
