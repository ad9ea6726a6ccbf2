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

"""What a prepared claim got, in ``ResourceClaim.status.devices``.

The scheduler allocated a deployable; cyborg_lite may bind the claim's
accelerator requests to a sibling region that serves the same profile, and
it picks the attach handle. Each allocated device of this driver gets one
``AllocatedDeviceStatus``: a ``Ready`` condition, ``data`` naming the
handles the container was given (their PCI function, handle type, the
resource provider cyborg_lite bound and the one allocated) and, for a
network function with a netdev on the host, ``networkData`` (its interface
name and MAC address, read from sysfs).

Written in the background once the claim is prepared, through the claim's
``status`` subresource with its ``resourceVersion`` (a conflict reads the
claim again), replacing only this driver's entries. Needs the
``DRAResourceClaimDeviceStatus`` feature gate (beta, on by default, from
Kubernetes 1.33); a refused write is logged and does not fail the claim:
the container has its device either way.
"""

import datetime
import logging
import os

from cyborg_lite_dra import devnodes
from cyborg_lite_dra import kube

LOG = logging.getLogger(__name__)

READY = "Ready"
#: ``data`` is at most 10 KiB; a claim's device has few handles, this
#: bounds what one device reports.
MAX_HANDLES = 32


def _now():
    return datetime.datetime.now(datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ")


def _netdev(sysfs_root, address):
    """``(interface name, MAC address)`` of a function with a netdev."""
    net = os.path.join(sysfs_root, "bus", "pci", "devices", address, "net")
    try:
        names = sorted(os.listdir(net))
    except OSError:
        return None
    for name in names:
        try:
            with open(os.path.join(net, name, "address"),
                      encoding="ascii") as f:
                return name, f.read().strip()
        except OSError:
            continue
    return None


def _handle(arq, entry):
    info = arq.get("attach_handle_info") or {}
    handle = {"pciBusID": devnodes.pci_address(arq),
              "type": arq.get("attach_handle_type") or "PCI",
              "acceleratorRequest": arq["uuid"],
              "resourceProviderUUID": arq.get("device_rp_uuid")}
    if arq.get("device_rp_uuid") not in (None, entry["rp_uuid"]):
        handle["allocatedResourceProviderUUID"] = entry["rp_uuid"]
    for key, name in (("asked_type", "mdevType"),
                      ("physical_network", "physicalNetwork")):
        if info.get(key):
            handle[name] = info[key]
    return handle


def device_statuses(driver, record, arqs, sysfs_root="/sys"):
    """The ``AllocatedDeviceStatus`` entries of a prepared claim.

    :param record: the claim's checkpoint record (``arqs``: {arq uuid:
        {"pool", "device", "rp_uuid", ...}}).
    :param arqs: {arq uuid: bound ARQ} as cyborg_lite answered.
    """
    grouped = {}
    for arq_uuid, entry in sorted(record["arqs"].items()):
        arq = arqs.get(arq_uuid)
        if arq is None:
            continue
        grouped.setdefault((entry["pool"], entry["device"]), []).append(
            (arq, entry))
    now = _now()
    statuses = []
    for (pool, device), bound in sorted(grouped.items()):
        handles = [_handle(arq, entry) for arq, entry in bound]
        got = ", ".join(h["pciBusID"] for h in handles)
        status = {
            "driver": driver, "pool": pool, "device": device,
            "conditions": [{
                "type": READY, "status": "True", "reason": "Prepared",
                "message": (f"{len(handles)} attach handle(s) bound by "
                            f"cyborg_lite: {got}")[:1024],
                "lastTransitionTime": now}],
            "data": {"handles": handles[:MAX_HANDLES]}}
        for handle in handles:
            netdev = _netdev(sysfs_root, handle["pciBusID"])
            if netdev:
                status["networkData"] = {"interfaceName": netdev[0],
                                         "hardwareAddress": netdev[1]}
                break
        statuses.append(status)
    return statuses


def _key(status):
    return (status.get("driver"), status.get("pool"), status.get("device"))


def publish(kube_api, driver, namespace, name, uid, statuses, attempts=3):
    """Write ``statuses`` into the claim's ``status.devices``, replacing
    this driver's entries; returns True when written.

    A claim gone or replaced (another uid) is left alone; API errors are
    logged.
    """
    for attempt in range(attempts):
        try:
            body = kube_api.read_claim(namespace, name)
            if body is None or body.get("metadata", {}).get("uid") != uid:
                return False
            current = (body.get("status") or {}).get("devices") or []
            keys = {_key(s) for s in statuses}
            kept = [s for s in current
                    if s.get("driver") != driver and _key(s) not in keys]
            body.setdefault("status", {})["devices"] = kept + statuses
            kube_api.replace_claim_status(body)
            return True
        except kube.KubeError as error:
            if error.status == 409 and attempt < attempts - 1:
                continue
            LOG.warning("Writing the device status of ResourceClaim %s/%s "
                        "(%s): %s", namespace, name, uid, error)
            return False
    return False
