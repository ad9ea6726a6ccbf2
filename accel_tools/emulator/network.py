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


"""Builders of the documents of a NIC with SR-IOV.

A device of type ``NIC`` is a Chassis NetworkAdapter (DMTF NetworkAdapter
v1_14: ``Controllers[].ControllerCapabilities.VirtualizationOffload`` with
``SRIOV`` and ``VirtualFunction``, ``Controllers[].Links.PCIeDevices``),
with one NetworkDeviceFunction per physical function (``MaxVirtualFunctions``,
``VirtualFunctionsEnabled``, ``Links.PCIeFunction``). Its PCIe device and
functions (the PFs, and the VFs once enabled) are served by
:mod:`.resources` like any device's, the shape of DMTF's public-tower
mockup and of the schemas.
"""

import uuid

from accel_tools.emulator import devices
from accel_tools.emulator import exception
from accel_tools.emulator import resources as res
from accel_tools.emulator import state as st

_OK = {"State": "Enabled", "Health": "OK"}


def _link(path):
    return {"@odata.id": path}


def device_function_uri(sid, did, pf_id):
    return "%s/NetworkDeviceFunctions/%s" % (res.network_adapter_uri(sid, did), pf_id)


def mac_address(sid, did, pf_id):
    """A stable, locally administered MAC address of one physical function."""
    raw = uuid.uuid5(st.UUID_NAMESPACE, "mac/%s/%s/%s" % (sid, did, pf_id)).bytes[:6]
    octets = bytes([(raw[0] | 0x02) & 0xFE]) + raw[1:]
    return ":".join("%02X" % o for o in octets)


def adapter_collection(sid, rec):
    members = [res.network_adapter_uri(sid, d["id"]) for d in rec["devices"] if devices.is_nic(d)]
    return {
        "@odata.type": "#NetworkAdapterCollection.NetworkAdapterCollection",
        "@odata.id": res.network_adapters_uri(sid),
        "Name": "Network Adapter Collection",
        "Members": [_link(m) for m in members],
        "Members@odata.count": len(members),
    }


def adapter(sid, dev):
    """A NetworkAdapter with one controller and its SR-IOV capabilities."""
    pfs = devices.physical_functions(dev)
    functions = [_link(device_function_uri(sid, dev["id"], f["id"])) for f in pfs]
    return {
        "@odata.type": "#NetworkAdapter.v1_14_0.NetworkAdapter",
        "@odata.id": res.network_adapter_uri(sid, dev["id"]),
        "Id": dev["id"],
        "Name": "%s %s" % (dev["manufacturer"], dev["model"]),
        "Manufacturer": dev["manufacturer"],
        "Model": dev["model"],
        "Status": devices.status(dev),
        "Controllers": [{
            "FirmwarePackageVersion": dev["firmware_version"],
            "ControllerCapabilities": {
                "NetworkPortCount": len(pfs),
                "NetworkDeviceFunctionCount": len(pfs),
                "VirtualizationOffload": {
                    "SRIOV": {"SRIOVEnabled": dev["max_vfs"] > 0,
                              "SRIOVVEPACapable": False},
                    "VirtualFunction": {"DeviceMaxCount": dev["max_vfs"] * len(pfs),
                                        "NetworkPortMaxCount": dev["max_vfs"],
                                        "MinAssignmentGroupSize": 1},
                },
            },
            "PCIeInterface": {"PCIeType": "Gen3", "MaxPCIeType": "Gen3",
                              "LanesInUse": 16, "MaxLanes": 16},
            "Links": {
                "PCIeDevices": [_link(res.pcie_device_uri(sid, dev["id"]))],
                "NetworkDeviceFunctions": functions,
                "NetworkDeviceFunctions@odata.count": len(functions),
            },
        }],
        "NetworkDeviceFunctions": _link(
            res.network_adapter_uri(sid, dev["id"]) + "/NetworkDeviceFunctions"),
    }


def device_function_collection(sid, dev):
    members = [device_function_uri(sid, dev["id"], f["id"])
               for f in devices.physical_functions(dev)]
    return {
        "@odata.type": "#NetworkDeviceFunctionCollection.NetworkDeviceFunctionCollection",
        "@odata.id": res.network_adapter_uri(sid, dev["id"]) + "/NetworkDeviceFunctions",
        "Name": "Network Device Function Collection",
        "Members": [_link(m) for m in members],
        "Members@odata.count": len(members),
    }


def device_function(sid, dev, fid):
    """The NetworkDeviceFunction of the physical function ``fid``.

    :raises: NotFound when the NIC has no such physical function.
    """
    pf = next((f for f in devices.physical_functions(dev) if str(f["id"]) == fid), None)
    if pf is None:
        raise exception.NotFound("NetworkDeviceFunction %s of %s" % (fid, dev["id"]))
    mac = mac_address(sid, dev["id"], pf["id"])
    enabled = [f for f in dev["functions"]
               if f["type"] == "Virtual" and f.get("physical_function") == pf["id"]]
    return {
        "@odata.type": "#NetworkDeviceFunction.v1_11_1.NetworkDeviceFunction",
        "@odata.id": device_function_uri(sid, dev["id"], pf["id"]),
        "Id": str(pf["id"]),
        "Name": "%s port %d" % (dev["model"], pf["id"]),
        "NetDevFuncType": "Ethernet",
        "NetDevFuncCapabilities": ["Ethernet"],
        "DeviceEnabled": True,
        "Ethernet": {"MACAddress": mac, "PermanentMACAddress": mac, "MTUSize": 1500},
        "MaxVirtualFunctions": dev["max_vfs"],
        "VirtualFunctionsEnabled": bool(enabled),
        "Status": _OK,
        "Links": {"PCIeFunction": _link(res.pcie_function_uri(sid, dev["id"], pf["id"]))},
    }
