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

"""Attach handles for inventory documents that carry none.

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

A device the BMC describes without a PCI address (schema 1.1: most real
BMCs) is first completed by :func:`complete_devices`: its address, and
vendor and product ids it lacks, come from the one device the agent found
that fits it (same type, same ids and vendor where both sides know them).
Alike devices (eight identical GPUs) that the agent finds in the same
number are paired in document order with the addresses in PCI order;
anything less certain leaves the device incomplete, with a warning.
"""

import copy
import re

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
    return inventory.region_label(device, region)


def regions_without_handles(document):
    """Regions of ``document`` with no ``attach_handles`` key.

    :returns: ``device-pci-address/region-id`` labels (the device id for a
        device without an address), in document order.
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


def _vendor_word(name):
    words = re.findall(r"[A-Za-z0-9]+", name or "")
    return words[0].upper() if words else None


def _fits(device, found):
    """True when the agent's ``found`` may be the document's ``device``."""
    if device["type"] != found.get("type"):
        return False
    for field in ("vendor_id", "product_id"):
        if device.get(field) and found.get(field) and (
                device[field].lower() != str(found[field]).lower()):
            return False
    ours, theirs = (_vendor_word(device.get("vendor")),
                    _vendor_word(found.get("vendor")))
    return not (ours and theirs and ours != theirs)


def _alike(devices):
    keys = {(d["type"], d.get("vendor_id"), d.get("product_id"),
             _vendor_word(d.get("vendor")), d.get("model"))
            for d in devices}
    return len(keys) == 1


def _natural(text):
    return [int(part) if part.isdigit() else part
            for part in re.split(r"(\d+)", text)]


def complete_devices(document, discovered):
    """Give the document's address-less devices what the agent found.

    :param document: a valid inventory document.
    :param discovered: the ``devices`` of an agent's ``discover`` answer.
    :returns: ``(document, completed, incomplete)``: a new validated
        document (the input is not changed), ``{device id: pci address}``
        of the devices completed, and the ids of those still without an
        address, each with the reason.
    """
    result = copy.deepcopy(document)
    pending = [d for d in result["devices"] if not inventory.has_address(d)]
    if not pending:
        return result, {}, {}
    taken = {d["pci_address"].lower() for d in result["devices"]
             if inventory.has_address(d)}
    free = sorted((f for f in discovered
                   if f.get("pci_address")
                   and f["pci_address"].lower() not in taken),
                  key=lambda f: f["pci_address"].lower())
    candidates = {d["id"]: [f for f in free if _fits(d, f)]
                  for d in pending}
    completed, incomplete = {}, {}
    groups = {}
    for device in pending:
        key = tuple(f["pci_address"].lower() for f in candidates[device["id"]])
        groups.setdefault(key, []).append(device)
    for key, devices in groups.items():
        overlapping = [d for d in pending if d not in devices
                       and set(key) & {f["pci_address"].lower()
                                       for f in candidates[d["id"]]}]
        if not key:
            reason = "the agent found no device that fits"
        elif overlapping or len(key) != len(devices) or not _alike(devices):
            reason = (f"{len(devices)} device(s) and {len(key)} found "
                      f"in-band ({', '.join(key)}) cannot be paired for "
                      f"certain")
        else:
            reason = None
        if reason:
            for device in devices:
                incomplete[device["id"]] = reason
            continue
        found = {f["pci_address"].lower(): f for f in free}
        for device, address in zip(
                sorted(devices, key=lambda d: _natural(d["id"])), key):
            match = found[address]
            device["pci_address"] = address
            for field in ("vendor_id", "product_id"):
                if not device.get(field) and match.get(field):
                    device[field] = str(match[field]).lower()
            completed[device["id"]] = address
    result["schema_version"] = inventory.version_for(result["devices"])
    return inventory.validate(result), completed, incomplete


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
        gave nothing, or None), ``completed`` (``{device id: PCI
        address}`` of the address-less devices the agent completed) and
        ``incomplete`` (``{device id: reason}`` of those it could not).
    """
    host = document["host"]
    missing = regions_without_handles(document)
    report = {"source": DOCUMENT, "filled": [], "kept": [], "unmatched": [],
              "error": None, "completed": {}, "incomplete": {}}
    if not missing:
        return document, report
    server = agent_host or host
    report.update(source=KEPT, kept=missing, incomplete={
        d["id"]: "the agent was not asked" for d in document["devices"]
        if not inventory.has_address(d)})
    try:
        discovered = agent_api.discover(server)["devices"]
        completed, report["completed"], incomplete = complete_devices(
            document, discovered)
        merged, unmatched = handles.merge_discovered(completed, discovered)
        merged = _keep_document_handles(completed, merged)
        report["incomplete"] = incomplete
        missing = regions_without_handles(completed)
    except agent_exception.AgentError as exc:
        report["error"] = str(exc)
    except (common_exception.InvalidInventory, KeyError, TypeError,
            AttributeError) as exc:
        report["error"] = (f"the answer of agent {server} does not fit the "
                           f"document: {exc}")
    if report["error"]:
        report["completed"] = {}
        report["incomplete"] = {
            d["id"]: "the agent gave nothing" for d in document["devices"]
            if not inventory.has_address(d)}
        LOG.warning("Host %s: attach handles not discovered, the handles "
                    "already known for %d region(s) are kept: %s", host,
                    len(missing), report["error"])
        return document, report
    if unmatched:
        LOG.warning("Host %s: agent %s found device(s) %s that the "
                    "inventory document does not list; they are ignored",
                    host, server, ", ".join(unmatched))
    if report["incomplete"]:
        LOG.warning("Host %s: device(s) without a PCI address not completed "
                    "in-band: %s", host, "; ".join(
                        f"{k}: {v}" for k, v in
                        sorted(report["incomplete"].items())))
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
