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

"""The node's devices as DRA sees them: one per cyborg_lite deployable of
the node's host, read from the v2 API (devices of the host, then the
deployables named after them: ``<host>_<device PCI address>_<region>``).
"""

import collections
import hashlib
import json
import re
import threading

#: One allocatable DRA device: a cyborg_lite deployable (a region, or a
#: whole card) of this node.
NodeDevice = collections.namedtuple("NodeDevice", [
    "name", "rp_uuid", "deployable_uuid", "type", "vendor_id", "product_id",
    "pci_address", "region", "resource_class", "bitstream_id",
    "num_accelerators", "model", "function_trait"], defaults=[None])

_NOT_LABEL = re.compile(r"[^a-z0-9-]+")
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


def device_name(device_type, pci_address, region, rp_uuid):
    """A DNS label naming a deployable, stable across restarts.

    From what does not change while the card is in its slot: its type, PCI
    address and region id, e.g. ``fpga-0000-5e-00-0-r0``. A name that
    would not be a DNS label (too long, nothing left of it) is the type and
    a digest of the deployable's resource provider uuid instead.
    """
    raw = f"{device_type}-{pci_address or 'nopci'}-r{region}".lower()
    name = _NOT_LABEL.sub("-", raw.replace(":", "-").replace(".", "-"))
    name = re.sub("-+", "-", name).strip("-")
    if DNS_LABEL.match(name):
        return name
    digest = hashlib.sha256(rp_uuid.encode()).hexdigest()[:16]
    prefix = _NOT_LABEL.sub("", device_type.lower())[:40] or "device"
    return f"{prefix}-{digest}"


def _attributes(deployable):
    try:
        pairs = json.loads(deployable.get("attributes_list") or "[]")
    except ValueError:
        return {}
    found = {}
    for pair in pairs if isinstance(pairs, list) else ():
        if isinstance(pair, dict):
            found.update(pair)
    return found


def node_devices(client, hostname):
    """The DRA devices of ``hostname``, sorted by name.

    :param client: a :class:`cyborg_lite_dra.cyborg.Client`.
    :returns: a list of :class:`NodeDevice`.
    """
    devices = client.devices(hostname)
    if not devices:
        return []
    by_prefix = {}
    for device in devices:
        try:
            board = json.loads(device.get("std_board_info") or "{}")
        except ValueError:
            board = {}
        by_prefix[f"{hostname}_{board.get('pci_address')}_"] = (device, board)
    found = []
    for deployable in client.deployables():
        name = deployable.get("name") or ""
        for prefix, (device, board) in by_prefix.items():
            if not name.startswith(prefix):
                continue
            region = name[len(prefix):]
            attrs = _attributes(deployable)
            found.append(NodeDevice(
                name=device_name(device["type"], board.get("pci_address"),
                                 region, deployable["rp_uuid"]),
                rp_uuid=deployable["rp_uuid"],
                deployable_uuid=deployable["uuid"],
                type=device["type"],
                vendor_id=board.get("vendor_id"),
                product_id=board.get("product_id"),
                pci_address=board.get("pci_address"),
                region=region,
                resource_class=attrs.get("rc"),
                bitstream_id=deployable.get("bitstream_id"),
                num_accelerators=deployable.get("num_accelerators"),
                model=device.get("model")))
            break
    return sorted(found, key=lambda d: d.name)


class NodeInventory:
    """The node's devices, read again when asked for one it does not know
    (a device allocated from a slice published before a restart).

    :param client: a :class:`cyborg_lite_dra.cyborg.Client`.
    :param functions: optional ``functions(rp uuids) -> {rp uuid: function
        trait}`` (:class:`cyborg_lite_dra.functions.FunctionTraits`).
    """

    def __init__(self, client, hostname, functions=None):
        self._client = client
        self._hostname = hostname
        self._functions = functions
        self._lock = threading.Lock()
        self._by_name = {}

    def refresh(self):
        """Read the devices again; returns them (sorted by name)."""
        devices = node_devices(self._client, self._hostname)
        if self._functions is not None and devices:
            traits = self._functions([d.rp_uuid for d in devices])
            devices = [d._replace(function_trait=traits.get(d.rp_uuid))
                       for d in devices]
        with self._lock:
            self._by_name = {d.name: d for d in devices}
        return devices

    def find(self, name):
        """The :class:`NodeDevice` named ``name``, or None."""
        with self._lock:
            device = self._by_name.get(name)
        if device is None:
            device = {d.name: d for d in self.refresh()}.get(name)
        return device
