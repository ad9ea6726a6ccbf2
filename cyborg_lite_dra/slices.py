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

from cyborg_lite_dra import kube

LOG = logging.getLogger(__name__)

#: Devices per ResourceSlice (the API's limit).
MAX_DEVICES = 128

PCI_BUS_ID = "resource.kubernetes.io/pciBusID"

#: ``health`` attribute values, and the taint of each unhealthy one:
#: (taint key in the driver's domain, effect).
HEALTHY = "ok"
MAINTAINING = "maintaining"
GONE = "gone"
TAINTS = {MAINTAINING: ("maintaining", "NoSchedule"),
          GONE: ("gone", "NoExecute")}


def health(device):
    """``gone`` (Placement marks its device vanished), ``maintaining``
    (an operator disabled its device in cyborg_lite) or ``ok``."""
    if device.gone:
        return GONE
    if device.device_status == MAINTAINING:
        return MAINTAINING
    return HEALTHY


def _string(value):
    return {"string": str(value)}


def device_entry(device, driver=None, taints=False):
    """The ResourceSlice ``Device`` of a :class:`NodeDevice`.

    ``resource.kubernetes.io/pciBusID`` is the function the container
    gets, published only where it is known before the bind (a whole card);
    ``cardPCIBusID`` is the card's address on every device. ``health``
    says whether the device may be used; with ``taints`` (clusters with
    the ``DRADeviceTaints`` feature gate) an unhealthy device also carries
    a taint ``<driver>/maintaining`` (NoSchedule) or ``<driver>/gone``
    (NoExecute: pods using it are evicted).
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
    state = health(device)
    attributes["health"] = _string(state)
    entry = {"name": device.name, "attributes": attributes}
    if taints and state in TAINTS:
        key, effect = TAINTS[state]
        entry["taints"] = [{"key": f"{driver}/{key}", "value": state,
                            "effect": effect}]
    if device.num_accelerators:
        entry["capacity"] = {
            "accelerators": {"value": str(device.num_accelerators)}}
    return entry


def slice_name(node, driver, index):
    """The fixed name of the node's ``index``-th slice of ``driver``."""
    return f"{node}-{driver}-{index}".lower()[:253]


def desired(devices, driver, node, generation, taints=False):
    """The ResourceSlice documents for ``devices`` (at least one device
    each; none when there are no devices)."""
    entries = [device_entry(d, driver, taints) for d in devices]
    chunks = [entries[i:i + MAX_DEVICES]
              for i in range(0, len(entries), MAX_DEVICES)]
    return [{
        "apiVersion": kube.API_VERSION, "kind": "ResourceSlice",
        "metadata": {"name": slice_name(node, driver, index)},
        "spec": {"driver": driver, "nodeName": node,
                 "pool": {"name": node, "generation": generation,
                          "resourceSliceCount": len(chunks)},
                 "devices": chunk},
    } for index, chunk in enumerate(chunks)]


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
            spec.get("pool", {}).get("resourceSliceCount"))


def sync(api, driver, node, devices, attempts=3, taints=False):
    """Make the API server's slices of ``driver`` on ``node`` describe
    ``devices`` (with taints for unhealthy ones when ``taints``).

    :param api: a :class:`cyborg_lite_dra.kube.Kube`.
    :returns: True when something was written.
    :raises kube.KubeError: when the API server keeps refusing.
    """
    for attempt in range(attempts):
        existing = {s["metadata"]["name"]: s
                    for s in api.list_slices(driver, node)}
        generations = {s["spec"]["pool"].get("generation", 0)
                       for s in existing.values()}
        current = max(generations, default=0)
        wanted = desired(devices, driver, node, current, taints)
        if (len(generations) <= 1 and sorted(map(_content, wanted))
                == sorted(map(_content, existing.values()))):
            return False
        try:
            _write(api, existing, desired(devices, driver, node,
                                          current + 1, taints))
            LOG.info("Published %d device(s) of %s in %d ResourceSlice(s), "
                     "pool generation %d", len(devices), node,
                     len(wanted), current + 1)
            return True
        except kube.KubeError as error:
            if error.status != 409 or attempt == attempts - 1:
                raise
            LOG.info("ResourceSlice conflict (%s); reading them again",
                     error)
    return False


def _write(api, existing, wanted):
    for body in wanted:
        name = body["metadata"]["name"]
        if name in existing:
            body["metadata"]["resourceVersion"] = (
                existing[name]["metadata"]["resourceVersion"])
            api.replace_slice(body)
        else:
            api.create_slice(body)
    for name in set(existing) - {b["metadata"]["name"] for b in wanted}:
        api.delete_slice(name)
