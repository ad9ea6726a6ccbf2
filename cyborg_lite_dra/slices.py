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

"""The node's ResourceSlices: one pool named after the node, its devices
the node's cyborg_lite deployables (:mod:`cyborg_lite_dra.inventory`).

The desired slices are computed from the inventory, compared with what the
API server has, and written only when they differ: a new pool generation,
every slice replaced with its resourceVersion (a conflict re-reads and
tries again), slices no longer needed deleted.
"""

import logging

from accel_common import inventory as accel_inventory
from cyborg_lite_dra import inventory
from cyborg_lite_dra import kube

LOG = logging.getLogger(__name__)

#: Devices per ResourceSlice (the API's limit).
MAX_DEVICES = 128
#: Counters of all shared counter sets of one ResourceSlice (the API's
#: limit): one set of one counter per partitioned deployable.
MAX_COUNTERS = 32
#: The counter of a partitioned deployable: its attach handles.
COUNTER = "handles"

PCI_BUS_ID = "resource.kubernetes.io/pciBusID"

#: ``health`` attribute values, and the taint of each unhealthy one:
#: (taint key in the driver's domain, effect).
HEALTHY = "ok"
MAINTAINING = "maintaining"
GONE = "gone"
ERROR = "error"
WARNING = "warning"
CRITICAL = "critical"
TAINTS = {MAINTAINING: ("maintaining", "NoSchedule"),
          GONE: ("gone", "NoExecute"),
          ERROR: ("error", "NoSchedule"),
          WARNING: ("unhealthy", "NoSchedule"),
          CRITICAL: ("unhealthy", "NoExecute")}
#: What cyborg_lite's v2 API says of a disabled device (its ``status``) and
#: of a region whose programming failed (its ``state``): cyborg_lite's
#: ``DeviceStatus.MAINTAINING`` and ``RegionState.ERROR``, read over HTTP.
API_DEVICE_MAINTAINING = "maintaining"
API_REGION_ERROR = "error"
#: The taint of a device whose every unit VMs hold (in Placement).
HELD_BY_VMS = ("held-by-vms", "all-units", "NoSchedule")


def held_by_vms(device):
    """True when Placement says VMs hold every unit of the device's
    provider (no claim can get one)."""
    return device.free is not None and device.free <= 0


def health(device):
    """What stops a device being used, worst first: ``gone`` (Placement
    marks its device vanished), ``critical`` (its card's BMC reports
    ``Critical``), ``error`` (cyborg_lite's region state: a programming
    failed), ``maintaining`` (an operator disabled its device in
    cyborg_lite), ``warning`` (the BMC reports ``Warning``); else ``ok``.
    """
    if device.gone:
        return GONE
    if device.device_health == accel_inventory.Health.CRITICAL:
        return CRITICAL
    if device.region_state == API_REGION_ERROR:
        return ERROR
    if device.device_status == API_DEVICE_MAINTAINING:
        return MAINTAINING
    if device.device_health == accel_inventory.Health.WARNING:
        return WARNING
    return HEALTHY


def _string(value):
    return {"string": str(value)}


def device_entry(device, driver=None, taints=False):
    """The ResourceSlice ``Device`` of a :class:`NodeDevice`.

    ``resource.kubernetes.io/pciBusID`` is the function the container
    gets, published only where it is known before the bind (a whole card);
    ``cardPCIBusID`` is the card's address on every device. ``health``
    says whether the device may be used (:func:`health`); with ``taints``
    (clusters with the ``DRADeviceTaints`` feature gate) an unhealthy
    device also carries a taint: ``<driver>/maintaining``,
    ``<driver>/error`` or ``<driver>/unhealthy`` (value ``warning``)
    NoSchedule, ``<driver>/unhealthy`` (value ``critical``) or
    ``<driver>/gone`` NoExecute (pods using it are evicted); one whose
    every unit VMs hold carries ``<driver>/held-by-vms`` (NoSchedule: its
    pods stay).
    """
    attributes = {
        "type": _string(device.type),
        "resourceProviderUUID": _string(device.rp_uuid),
        "deployableUUID": _string(device.deployable_uuid),
    }
    optional = {"region": device.region,
                "deviceUUID": device.device_uuid,
                "vendorID": device.vendor_id,
                "productID": device.product_id,
                "resourceClass": device.resource_class,
                "bitstreamID": device.bitstream_id,
                "model": device.model,
                "functionTrait": device.function_trait,
                "cardPCIBusID": (device.pci_address
                                 and device.pci_address.lower()),
                PCI_BUS_ID: device.pci_bus_id and device.pci_bus_id.lower()}
    attributes.update({key: _string(value)
                       for key, value in optional.items() if value})
    if device.partition is not None:
        attributes["partition"] = {"int": device.partition}
    state = health(device)
    attributes["health"] = _string(state)
    entry = {"name": device.name, "attributes": attributes}
    if taints and state in TAINTS:
        key, effect = TAINTS[state]
        entry["taints"] = [{"key": f"{driver}/{key}", "value": state,
                            "effect": effect}]
    if taints and held_by_vms(device):
        key, value, effect = HELD_BY_VMS
        entry.setdefault("taints", []).append(
            {"key": f"{driver}/{key}", "value": value, "effect": effect})
    if device.num_accelerators:
        entry["capacity"] = {
            "accelerators": {"value": str(device.num_accelerators)}}
    return entry


def slice_name(node, driver, index):
    """The fixed name of the node's ``index``-th slice of ``driver``."""
    return f"{node}-{driver}-{index}".lower()[:253]


def _consumes(counter_set, amount):
    return [{"counterSet": counter_set,
             "counters": {COUNTER: {"value": str(amount)}}}]


def _units(devices, driver, taints, partitionable):
    """``[(counter sets, entries)]``: a partitioned deployable's counter
    set with the whole deployable and its shares, which must share a
    slice; else one device each.

    A device whose every unit VMs hold, or whose region is in error, is
    left out (tainted instead with ``taints``). A partitioned one some of
    whose units VMs hold has as many handles in its counter as VMs leave,
    and its whole is left out.
    """
    units = []
    for device in devices:
        if not taints and (held_by_vms(device)
                           or device.region_state == ERROR):
            # NOTE(dra): cyborg_lite binds nothing to a region in error;
            # offering it would only fail the claim at prepare.
            continue
        entry = device_entry(device, driver, taints)
        shares = inventory.partitions(device) if partitionable else []
        if not shares:
            units.append(([], [entry]))
            continue
        count = device.num_accelerators
        free = count
        if device.free is not None and not held_by_vms(device):
            free = min(count, device.free)
        entries = []
        if free == count:
            entry["consumesCounters"] = _consumes(device.name, count)
            entries.append(entry)
        for share in shares:
            share_entry = device_entry(share, driver, taints)
            share_entry["consumesCounters"] = _consumes(device.name, 1)
            entries.append(share_entry)
        units.append(([{"name": device.name, "counters": {
            COUNTER: {"value": str(free)}}}], entries))
    return units


def _chunks(units):
    chunks = [([], [])]
    for counter_sets, entries in units:
        sets, current = chunks[-1]
        if current and (len(current) + len(entries) > MAX_DEVICES
                        or len(sets) + len(counter_sets) > MAX_COUNTERS):
            chunks.append(([], []))
            sets, current = chunks[-1]
        sets.extend(counter_sets)
        current.extend(entries)
    return [c for c in chunks if c[1]]


def desired(devices, driver, node, generation, taints=False,
            partitionable=False):
    """The ResourceSlice documents for ``devices`` (at least one device
    each; none when there are no devices).

    With ``partitionable`` (clusters with the ``DRAPartitionableDevices``
    feature gate), a deployable with several attach handles is published
    with a shared counter set of its handles (named after it), as a whole
    (consuming them all) and as one share per handle (consuming one), so
    that as many claims as it has handles can share it.
    """
    chunks = _chunks(_units(devices, driver, taints, partitionable))
    slices = []
    for index, (counter_sets, entries) in enumerate(chunks):
        spec = {"driver": driver, "nodeName": node,
                "pool": {"name": node, "generation": generation,
                         "resourceSliceCount": len(chunks)},
                "devices": entries}
        if counter_sets:
            spec["sharedCounters"] = counter_sets
        slices.append({"apiVersion": kube.API_VERSION,
                       "kind": "ResourceSlice",
                       "metadata": {"name": slice_name(node, driver, index)},
                       "spec": spec})
    return slices


def _device_content(device):
    if not device.get("taints"):
        return device
    # NOTE(dra): the API server stamps timeAdded on a taint written
    # without one.
    return dict(device, taints=[
        {k: v for k, v in taint.items() if k != "timeAdded"}
        for taint in device["taints"]])


def _content(slice_):
    spec = slice_.get("spec", {})
    return (slice_["metadata"]["name"],
            [_device_content(d) for d in spec.get("devices", [])],
            spec.get("sharedCounters", []),
            spec.get("pool", {}).get("resourceSliceCount"))


class FieldsDropped(Exception):
    """The API server stored the slices without fields of a feature whose
    gate is off there (``feature``: ``partitions`` for the shared counters
    of ``DRAPartitionableDevices``, ``taints`` for ``DRADeviceTaints``):
    without counters the shares would be independent devices, and either
    way every round would write the slices again."""

    def __init__(self, feature, message):
        super().__init__(message)
        self.feature = feature


def _dropped(stored):
    """The first feature whose fields a write came back without."""
    for sent, body in stored:
        spec = (body or {}).get("spec", {})
        if sent["spec"].get("sharedCounters") and \
                not spec.get("sharedCounters"):
            return "partitions", "DRAPartitionableDevices"
        kept = {d.get("name") for d in spec.get("devices", [])
                if d.get("taints")}
        if any(d.get("taints") and d["name"] not in kept
               for d in sent["spec"]["devices"]):
            return "taints", "DRADeviceTaints"
    return None


def sync(api, driver, node, devices, attempts=3, taints=False,
         partitionable=False):
    """Make the API server's slices of ``driver`` on ``node`` describe
    ``devices`` (with taints for unhealthy ones when ``taints``, shares of
    partitioned deployables when ``partitionable``).

    :param api: a :class:`cyborg_lite_dra.kube.Kube`.
    :returns: True when something was written.
    :raises kube.KubeError: when the API server keeps refusing.
    :raises FieldsDropped: the slices were written, but the API server
        dropped their counters or taints.
    """
    for attempt in range(attempts):
        existing = {s["metadata"]["name"]: s
                    for s in api.list_slices(driver, node)}
        generations = {s["spec"]["pool"].get("generation", 0)
                       for s in existing.values()}
        current = max(generations, default=0)
        wanted = desired(devices, driver, node, current, taints,
                         partitionable)
        if (len(generations) <= 1 and sorted(map(_content, wanted))
                == sorted(map(_content, existing.values()))):
            return False
        try:
            stored = _write(api, existing, desired(
                devices, driver, node, current + 1, taints, partitionable))
        except kube.KubeError as error:
            if error.status != 409 or attempt == attempts - 1:
                raise
            LOG.info("ResourceSlice conflict (%s); reading them again",
                     error)
            continue
        LOG.info("Published %d device(s) of %s in %d ResourceSlice(s), "
                 "pool generation %d", len(devices), node, len(wanted),
                 current + 1)
        dropped = _dropped(stored)
        if dropped:
            raise FieldsDropped(dropped[0], (
                f"the API server dropped the {dropped[0]} of the "
                f"ResourceSlices of {node} (is the {dropped[1]} feature "
                f"gate off?)"))
        return True
    return False


def _write(api, existing, wanted):
    """Write ``wanted``; returns ``[(sent, stored)]``."""
    stored = []
    for body in wanted:
        name = body["metadata"]["name"]
        if name in existing:
            body["metadata"]["resourceVersion"] = (
                existing[name]["metadata"]["resourceVersion"])
            stored.append((body, api.replace_slice(body)))
        else:
            stored.append((body, api.create_slice(body)))
    for name in set(existing) - {b["metadata"]["name"] for b in wanted}:
        api.delete_slice(name)
    return stored
