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

"""Matching what the agent discovered in-band to the inventory document.

Out of band (Ironic, via the BMC) knows devices and regions but rarely the
attach handles: VF BDFs exist only once the host enabled SR-IOV and mdev
types come from the host's sysfs. The agent's ``discover`` answer supplies
them; this module puts them into the document, matching devices by PF PCI
address (the identity both sides share) and regions by id. A region the
``pci`` driver matched with a device spec naming a ``resource_class`` or
``traits`` takes them too.
"""

import copy

from accel_common import inventory


def _by_address(devices):
    return {device["pci_address"].lower(): device for device in devices}


def _handle(handle):
    # NOTE(agent): only the fields the inventory schema allows.
    return {key: handle[key] for key in
            ("type", "pci_address", "mdev_type", "physical_network")
            if handle.get(key) is not None}


def _take_spec(region, match):
    """What the operator's device spec says of a region: its resource
    class, when the spec names one, replaces the document's (the
    operator's word over the class guessed from the device's type); its
    traits are the region's ``traits``."""
    if match.get("resource_class"):
        region["resource_class"] = match["resource_class"]
    if match.get("traits"):
        region["traits"] = sorted(set(match["traits"]))


def merge_discovered(document, discovered):
    """The document with each region's attach handles as discovered, and
    the resource class and traits the agent's device spec gives it.

    :param document: an inventory document (accel_common.inventory).
    :param discovered: the ``devices`` of an agent's ``discover`` answer.
    :returns: ``(new document, unmatched)``: the validated document (the
        input is not changed) and the PCI addresses the agent found that
        the document does not list. A device or region the agent did not
        find keeps the handles it had.
    :raises accel_common.exception.InvalidInventory: when the result is
        not a valid document (e.g. a handle listed twice).
    """
    merged = copy.deepcopy(document)
    found = _by_address(discovered)
    listed = set()
    for device in merged["devices"]:
        if not inventory.has_address(device):
            # NOTE(agent): completed first, if at all, by
            # cyborg_lite.inventory.handle_discovery.complete_devices.
            continue
        address = device["pci_address"].lower()
        listed.add(address)
        seen = found.get(address)
        if seen is None:
            continue
        regions = {region["id"]: region for region in seen["regions"]}
        if len(device["regions"]) == 1 and len(seen["regions"]) == 1:
            # One region on both sides: the ids may be spelled differently
            # (a whole device is region "0" out of band).
            regions = {device["regions"][0]["id"]: seen["regions"][0]}
        for region in device["regions"]:
            match = regions.get(region["id"])
            if match is None:
                continue
            if match.get("attach_handles"):
                region["attach_handles"] = [
                    _handle(h) for h in match["attach_handles"]]
            _take_spec(region, match)
    unmatched = sorted(set(found) - listed)
    return inventory.validate(merged), unmatched
