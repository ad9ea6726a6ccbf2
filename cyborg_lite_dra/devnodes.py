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

"""What a container needs of a bound accelerator request: the device nodes
of its attach handle and the variables SR-IOV CNI and Multus read.

A PCI handle (a VF, or a whole function) is used through VFIO: its IOMMU
group's ``/dev/vfio/<group>`` and the VFIO container ``/dev/vfio/vfio``.
An MDEV handle (a vGPU) through the VFIO group of an mdev of the asked
type on its parent. The sim driver's handles are not real functions: with
``[dra] simulated_device_node`` set, such a handle is given that host
character device, at ``/dev/cyborg-lite/<pci address>`` in the container.
"""

import json
import os
import re


class DeviceNodeError(Exception):
    """A handle has no device node on this host; the message says why."""


def pci_address(arq):
    """The PCI address of a bound ARQ's attach handle."""
    info = arq.get("attach_handle_info") or {}
    try:
        return (f"{info['domain']}:{info['bus']}:{info['device']}."
                f"{info['function']}").lower()
    except KeyError as error:
        raise DeviceNodeError(
            f"accelerator request {arq.get('uuid')} has no PCI address in "
            f"its attach_handle_info {info!r}") from error


def _iommu_group(sysfs_device):
    link = os.path.join(sysfs_device, "iommu_group")
    if not os.path.islink(link):
        return None
    return os.path.basename(os.readlink(link))


def _mdev_group(sysfs_root, address, mdev_uuid, mdev_type):
    """The VFIO group of the mediated device ``mdev_uuid`` on the parent
    ``address``, when it exists and is of ``mdev_type``.

    NOTE(cyborg_lite_dra): the handle's own mdev, never another of the
    same type: that one may be a VM's (Nova names each vGPU's mdev after
    its attach handle's uuid) or another claim's.
    """
    mdev = os.path.join(sysfs_root, "bus", "pci", "devices", address,
                        mdev_uuid or "")
    type_link = os.path.join(mdev, "mdev_type")
    if not mdev_uuid or not os.path.islink(type_link):
        return None
    if os.path.basename(os.readlink(type_link)) != mdev_type:
        return None
    return _iommu_group(mdev)


def _vfio_nodes(group):
    return [{"path": f"/dev/vfio/{group}"}, {"path": "/dev/vfio/vfio"}]


def device_nodes(arq, sysfs_root="/sys", simulated_node=""):
    """The CDI device nodes of a bound ARQ's attach handle.

    :raises DeviceNodeError: no VFIO group (the function is not bound to
        vfio-pci, the mdev does not exist) and no simulated node.
    """
    address = pci_address(arq)
    handle_type = arq.get("attach_handle_type")
    if handle_type == "MDEV":
        asked = (arq.get("attach_handle_info") or {}).get("asked_type")
        mdev_uuid = arq.get("attach_handle_uuid")
        group = _mdev_group(sysfs_root, address, mdev_uuid, asked)
        missing = (f"no mediated device {mdev_uuid} of type {asked} on "
                   f"{address} (create it: mdevctl start -u {mdev_uuid} "
                   f"-p {address} -t {asked})")
    else:
        group = _iommu_group(os.path.join(sysfs_root, "bus", "pci",
                                          "devices", address))
        missing = (f"PCI function {address} has no IOMMU group (is it "
                   f"bound to vfio-pci, is the IOMMU on?)")
    if group:
        return _vfio_nodes(group)
    if simulated_node:
        return [{"path": f"/dev/cyborg-lite/{address.replace(':', '-')}",
                 "hostPath": simulated_node}]
    raise DeviceNodeError(
        f"accelerator request {arq.get('uuid')}: {missing}")


def resource_env_name(resource_name):
    """``PCIDEVICE_<RESOURCE>`` as the SR-IOV network device plugin
    names it: the resource name upper-cased, ``.``, ``/`` and ``-``
    made ``_``."""
    return "PCIDEVICE_" + re.sub(r"[./-]", "_", resource_name).upper()


def environment(resource_handles):
    """The SR-IOV device plugin's variables for a claim.

    :param resource_handles: ``{resource name: [(pci address, nodes)]}``.
    :returns: ``["NAME=value"]``: ``PCIDEVICE_<RESOURCE>`` the
        comma-separated addresses, ``PCIDEVICE_<RESOURCE>_INFO`` the
        device-info JSON (k8snetworkplumbingwg device-info-spec) by
        address.
    """
    env = []
    for resource, handles in sorted(resource_handles.items()):
        name = resource_env_name(resource)
        info = {}
        for address, nodes in handles:
            entry = {"generic": {"deviceID": address}}
            groups = [n["path"] for n in nodes
                      if n["path"] != "/dev/vfio/vfio"]
            if any(n["path"] == "/dev/vfio/vfio" for n in nodes):
                entry["vfio"] = {"dev-mount": groups[0],
                                 "mount": "/dev/vfio/vfio"}
            else:
                entry["generic"]["devicePath"] = groups[0]
            info[address] = entry
        env.append(f"{name}={','.join(a for a, _ in handles)}")
        env.append(f"{name}_INFO={json.dumps(info, sort_keys=True)}")
    return env
