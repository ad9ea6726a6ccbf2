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


"""One device's update: is it needed, and did it happen.

The accelerator steps of :mod:`ironic_accel.firmware` run a queue of
device updates. :func:`plan` decides from the inventory document and what
the node last applied whether a device needs its update at all (the skips
that make a step safe to run twice); :func:`confirm` reads the device back
once the BMC says its task is done and refuses a device that does not run
what was asked.
"""

from oslo_log import log as logging
from oslo_utils import timeutils

from ironic_accel import exception as accel_exception
from ironic_accel import step_settings
from ironic_accel.redfish import inventory as redfish_inventory

LOG = logging.getLogger(__name__)

#: driver_internal_info key of the image last applied to each device (kept):
#: {device: {"checksum", "version", "url", "applied_at"}}.
APPLIED_KEY = "accel_applied_images"


def _now():
    return timeutils.utcnow().isoformat()


def plan(node, device, setting, kind):
    """The update of one device a step asks for, or None when the device
    is already as asked.

    :param node: the Ironic node.
    :param device: a device of the node's inventory document.
    :param setting: the step's setting that selected it (``url``,
        ``checksum``, ``version`` or ``function_id``).
    :param kind: ``firmware`` or ``function``.
    :returns: an item of the update queue: ``{"device", "uri", "url",
        "kind", "version", "function_id", "checksum", "before"}``.
    """
    regions = device["regions"]
    functions = sorted({r.get("function_id") or "" for r in regions})
    item = {"device": device["id"], "uri": device["redfish_uri"],
            "url": setting["url"], "kind": kind,
            "version": setting.get("version"),
            "function_id": setting.get("function_id"),
            "checksum": step_settings.expected_digest(
                setting["checksum"]),
            "before": (device["firmware_version"] if kind == "firmware"
                       else functions)}
    if kind == "firmware" and item["version"] and (
            device["firmware_version"] == item["version"]):
        LOG.info("Node %(node)s: accelerator %(dev)s already runs "
                 "firmware %(ver)s, skipped",
                 {"node": node.uuid, "dev": device["id"],
                  "ver": item["version"]})
        return None
    applied = (node.driver_internal_info.get(APPLIED_KEY) or {}).get(
        device["id"]) or {}
    # NOTE(ironic-accel): without a version to compare, the image is:
    # the one last applied successfully, while the device still runs
    # the version that update left, is not flashed again. This makes
    # a clean-steps file without versions safe to run twice.
    if kind == "firmware" and not item["version"] and (
            applied.get("checksum") == item["checksum"]
            and applied.get("version") == device["firmware_version"]):
        LOG.info("Node %(node)s: accelerator %(dev)s already runs the "
                 "image sha256:%(sum)s (firmware %(ver)s, applied "
                 "%(at)s), skipped",
                 {"node": node.uuid, "dev": device["id"],
                  "sum": item["checksum"], "ver": applied["version"],
                  "at": applied.get("applied_at")})
        return None
    if kind == "function" and item["function_id"] and (
            functions == [item["function_id"]]):
        LOG.info("Node %(node)s: accelerator %(dev)s already runs "
                 "function %(fn)s, skipped",
                 {"node": node.uuid, "dev": device["id"],
                  "fn": item["function_id"]})
        return None
    return item


def targets(node):
    """``{processor uri: FirmwareInventory member}`` of the node."""
    # NOTE(ironic-accel): a BMC that lists the device in its
    # FirmwareInventory wants that member as the SimpleUpdate target.
    versions = redfish_inventory.firmware_versions_by_processor(
        redfish_inventory.get_firmware_inventory(node))
    return {uri: member for uri, (member, _v) in versions.items()}


def _processor(node, uri):
    """The accelerator Processor at ``uri`` as the BMC reads it now, or
    None when it is gone."""
    uri = uri.rstrip("/")
    return next((proc for proc in
                 redfish_inventory.get_accelerator_processors(node)
                 if proc.path.rstrip("/") == uri), None)


def confirm(node, item):
    """Check, from what the BMC reads back, that a finished update did
    what it was asked, and record a firmware image as applied
    (:data:`APPLIED_KEY`).

    :raises AcceleratorBMCError: the device does not run what was asked.
    """
    device = item["device"]
    if item["kind"] == "firmware":
        versions = redfish_inventory.firmware_versions_by_processor(
            redfish_inventory.get_firmware_inventory(node))
        now = versions.get(item["uri"].rstrip("/"), (None, None))[1]
        if now is None:
            proc = _processor(node, item["uri"])
            now = proc.firmware_version if proc is not None else None
        expected = item["version"]
        if (expected and now != expected) or (
                not expected and now == item["before"]):
            raise accel_exception.AcceleratorBMCError(
                node=node.uuid, device=device,
                reason=f"the BMC reported the update with {item['url']} "
                       f"complete but the firmware version is still "
                       f"{now!r} (expected {expected or 'a change'})")
        item["after"] = now
        applied = dict(node.driver_internal_info.get(APPLIED_KEY) or {})
        applied[device] = {"checksum": item.get("checksum"),
                           "version": now, "url": item["url"],
                           "applied_at": _now()}
        node.set_driver_internal_info(APPLIED_KEY, applied)
        return
    proc = _processor(node, item["uri"])
    if proc is None:
        raise accel_exception.AcceleratorBMCError(
            node=node.uuid, device=device,
            reason=f"the device {item['uri']} is gone after programming")
    loaded = sorted({(f.uuid if f is not None else None) or ""
                     for f in proc.slot_functions.values()})
    wanted = item["function_id"]
    if (wanted and loaded != [wanted]) or (
            not wanted and loaded in ([""], [])):
        raise accel_exception.AcceleratorBMCError(
            node=node.uuid, device=device,
            reason=f"after loading {item['url']} the device runs "
                   f"{loaded or 'nothing'}, expected "
                   f"{wanted or 'a function'}")
    item["after"] = loaded
