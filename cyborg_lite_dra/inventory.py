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
the node's host, read from the v2 API.

A deployable names its device only by ``device_id``, the device's database
id, which ``GET /v2/devices`` does not show; what ties a device id to one
of the host's devices is the name cyborg_lite gives the device's
deployables, ``<host>_<device PCI address>`` followed by ``_<region>`` when
the device has several regions. Every deployable with that device id is
then that device's, whatever its own name.
"""

import collections
import hashlib
import json
import re
import threading

from cyborg_lite_dra import functions

#: One allocatable DRA device: a cyborg_lite deployable (a region, or a
#: whole card) of this node. ``pci_address`` is the card's address,
#: ``pci_bus_id`` the function a container gets when it is known before
#: the bind (a whole card), else None; ``region`` is None for a whole card;
#: ``device_status`` is cyborg_lite's (``enabled`` or ``maintaining``),
#: ``gone`` whether Placement marks the device vanished; ``region_state``
#: the deployable's (``ready``, ``programming`` or ``error``),
#: ``device_health`` what the card's BMC reports (``OK``, ``Warning``,
#: ``Critical``; None when nothing); ``partition`` the
#: index of a one-handle share of a deployable (:func:`partitions`), else
#: None; ``free`` the units of its provider that VMs leave (Placement's
#: ``total - reserved`` less what other consumers than claims hold), None
#: when not known.
NodeDevice = collections.namedtuple("NodeDevice", [
    "name", "rp_uuid", "deployable_uuid", "type", "vendor_id", "product_id",
    "pci_address", "region", "resource_class", "bitstream_id",
    "num_accelerators", "model", "function_trait", "pci_bus_id",
    "device_uuid", "device_status", "gone", "partition", "free",
    "region_state", "device_health"],
    defaults=[None, None, None, None, False, None, None, None, None])

#: Resource classes whose handles are mediated devices of the card (their
#: parent function is the card).
MDEV_CLASSES = ("VGPU",)
#: Resource classes of a card passed through whole: its one handle is the
#: card's own function. (An FPGA's or a NIC's single handle may be a VF.)
WHOLE_CLASSES = ("PGPU", "GPU")

_NOT_LABEL = re.compile(r"[^a-z0-9-]+")
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


def device_name(device_type, pci_address, region, rp_uuid):
    """A DNS label naming a deployable, stable across restarts.

    From what does not change while the card is in its slot: its type, PCI
    address and region id, e.g. ``fpga-0000-5e-00-0-r0``; a whole card
    (``region`` None) has no region part, e.g. ``gpu-0000-af-00-0``. A
    name that would not be a DNS label (too long, nothing left of it) is
    the type and a digest of the deployable's resource provider uuid
    instead.
    """
    raw = f"{device_type}-{pci_address or 'nopci'}"
    if region is not None:
        raw += f"-r{region}"
    raw = raw.lower()
    name = _NOT_LABEL.sub("-", raw.replace(":", "-").replace(".", "-"))
    name = re.sub("-+", "-", name).strip("-")
    if DNS_LABEL.match(name):
        return name
    digest = hashlib.sha256(rp_uuid.encode()).hexdigest()[:16]
    prefix = _NOT_LABEL.sub("", device_type.lower())[:40] or "device"
    return f"{prefix}-{digest}"


def partition_name(name, index):
    """The DNS label of the ``index``-th one-handle share of device
    ``name``: ``<name>-h<index>``, its digest when that is too long."""
    label = f"{name}-h{index}"
    if DNS_LABEL.match(label):
        return label
    digest = hashlib.sha256(label.encode()).hexdigest()[:16]
    return f"{name[:40].rstrip('-')}-{digest}"


def partitions(device):
    """The one-handle shares of a deployable with several attach handles
    (none for one with a single handle): each a :class:`NodeDevice` on the
    same resource provider, one accelerator, named by
    :func:`partition_name`."""
    count = device.num_accelerators or 0
    if count <= 1 or device.partition is not None:
        return []
    return [device._replace(name=partition_name(device.name, index),
                            num_accelerators=1, partition=index)
            for index in range(count)]


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


def _board(device):
    try:
        board = json.loads(device.get("std_board_info") or "{}")
    except ValueError:
        return {}
    return board if isinstance(board, dict) else {}


def _named(name, hostname):
    """``(device PCI address, region or None)`` a deployable's name gives
    on ``hostname``, or None when the name is not of that host."""
    prefix = f"{hostname}_"
    if not name.startswith(prefix):
        return None
    address, _, region = name[len(prefix):].partition("_")
    return address.lower(), (region or None)


def _owners(devices, deployables, hostname):
    """``{device_id: device}``: the host's devices by the id their
    deployables carry; a device id claimed by two devices is nobody's."""
    by_address = {}
    for device in devices:
        address = (_board(device).get("pci_address") or "").lower()
        if address:
            by_address[address] = device
    owners, clashes = {}, set()
    for deployable in deployables:
        named = _named(deployable.get("name") or "", hostname)
        device = named and by_address.get(named[0])
        device_id = deployable.get("device_id")
        if device is None or device_id is None:
            continue
        if owners.setdefault(device_id, device) is not device:
            clashes.add(device_id)
    for device_id in clashes:
        del owners[device_id]
    return owners


def _function(device, board, members, attrs):
    """The PCI function a container gets from a deployable, when known
    before the bind: the card itself for a GPU passed through whole (one
    handle), or the card as the parent of its mediated devices."""
    if len(members) != 1:
        return None
    (deployable,) = members
    rc = (attrs.get("rc") or "").upper()
    if ((rc in WHOLE_CLASSES and deployable.get("num_accelerators") == 1)
            or rc in MDEV_CLASSES):
        return (board.get("pci_address") or "").lower() or None
    return None


def node_devices(client, hostname):
    """The DRA devices of ``hostname``, sorted by name: every deployable
    of the host's devices that has attach handles.

    :param client: a :class:`cyborg_lite_dra.cyborg.Client`.
    :returns: a list of :class:`NodeDevice`.
    """
    devices = client.devices(hostname)
    if not devices:
        return []
    deployables = client.deployables()
    owners = _owners(devices, deployables, hostname)
    members = collections.defaultdict(list)
    for deployable in deployables:
        if deployable.get("device_id") in owners:
            members[deployable["device_id"]].append(deployable)
    found = []
    for device_id, group in members.items():
        device = owners[device_id]
        board = _board(device)
        whole = len(group) == 1
        for deployable in group:
            if not deployable.get("num_accelerators"):
                continue
            named = _named(deployable.get("name") or "", hostname)
            region = None if whole else (named and named[1]) or None
            if region is None and not whole:
                # NOTE(dra): a region of a card with several, named
                # otherwise: its resource provider tells it apart.
                region = deployable["rp_uuid"]
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
                model=device.get("model"),
                pci_bus_id=_function(device, board, group, attrs),
                device_uuid=device.get("uuid"),
                device_status=device.get("status"),
                region_state=deployable.get("state"),
                device_health=device.get("health")))
    return sorted(found, key=lambda d: d.name)


class NodeInventory:
    """The node's devices, read again when asked for one it does not know
    (a device allocated from a slice published before a restart).

    :param client: a :class:`cyborg_lite_dra.cyborg.Client`.
    :param functions: optional ``functions(rp uuids) -> {rp uuid: traits}``
        (:class:`cyborg_lite_dra.functions.FunctionTraits`): gives each
        device its function trait and whether its device is gone.
    :param free: optional ``free({rp uuid: resource class}) -> {rp uuid:
        units}`` (:meth:`cyborg_lite_dra.ledger.Ledger.free`): gives each
        device the units VMs leave.
    """

    def __init__(self, client, hostname, functions=None, free=None):
        self._client = client
        self._hostname = hostname
        self._functions = functions
        self._free = free
        self._lock = threading.Lock()
        self._by_name = {}

    def refresh(self):
        """Read the devices again; returns them (sorted by name)."""
        devices = node_devices(self._client, self._hostname)
        if self._functions is not None and devices:
            traits = self._functions([d.rp_uuid for d in devices])
            devices = [d._replace(
                function_trait=functions.function_of(
                    traits.get(d.rp_uuid, ())),
                gone=functions.RETIRED_TRAIT in traits.get(d.rp_uuid, ()))
                for d in devices]
        if self._free is not None and devices:
            free = self._free({d.rp_uuid: d.resource_class for d in devices
                               if d.resource_class})
            devices = [d._replace(free=free.get(d.rp_uuid)) for d in devices]
        with self._lock:
            # NOTE(dra): shares are found whether or not they are published
            # now: a claim may hold one from an earlier publication.
            self._by_name = {d.name: d for d in devices}
            self._by_name.update({p.name: p for d in devices
                                  for p in partitions(d)})
        return devices

    def find(self, name):
        """The :class:`NodeDevice` named ``name`` (a deployable or one of
        its shares), or None."""
        with self._lock:
            device = self._by_name.get(name)
        if device is None:
            self.refresh()
            with self._lock:
                device = self._by_name.get(name)
        return device
