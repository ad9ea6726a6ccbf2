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


"""Builders of the Redfish documents the emulator serves.

Each function takes the state (a :class:`~accel_tools.emulator.state.State`
or plain records from it) and returns one JSON document. Shapes follow
sushy's recorded samples and the DMTF schemas (Processor with the ``FPGA``
object, AccelerationFunction, PCIeDevice/PCIeFunction, UpdateService,
SoftwareInventory, Task).
"""

import json

from accel_tools.emulator import devices
from accel_tools.emulator import exception
from accel_tools.emulator import state as st

V1 = "/redfish/v1"
MANAGER_ID = "1"
RESET_TYPES = ["On", "ForceOff", "GracefulShutdown", "GracefulRestart",
               "ForceRestart", "Nmi", "ForceOn", "PushPowerButton", "PowerCycle"]
BOOT_TARGETS = ["None", "Pxe", "Cd", "Usb", "Hdd", "BiosSetup", "UefiHttp"]
BOOT_ENABLED = ["Disabled", "Once", "Continuous"]
BOOT_MODES = ["Legacy", "UEFI"]
_OK = {"State": "Enabled", "Health": "OK"}


def _link(path):
    return {"@odata.id": path}


def _collection(odata_type, path, name, members):
    return {
        "@odata.type": "#%s.%s" % (odata_type, odata_type),
        "@odata.id": path,
        "Name": name,
        "Members": [_link(m) for m in members],
        "Members@odata.count": len(members),
    }


def system_uri(sid):
    return "%s/Systems/%s" % (V1, sid)


def processor_uri(sid, did):
    return "%s/Processors/%s" % (system_uri(sid), did)


def chassis_uri(sid):
    return "%s/Chassis/%s" % (V1, sid)


def network_adapters_uri(sid):
    return "%s/NetworkAdapters" % chassis_uri(sid)


def network_adapter_uri(sid, did):
    return "%s/%s" % (network_adapters_uri(sid), did)


def pcie_device_uri(sid, did):
    return "%s/PCIeDevices/%s" % (chassis_uri(sid), did)


def pcie_function_uri(sid, did, fid):
    return "%s/PCIeFunctions/%s" % (pcie_device_uri(sid, did), fid)


def inventory_id(sid, did):
    return "BMC" if did == "BMC" else "%s-%s" % (sid, did)


def inventory_uri(sid, did):
    return "%s/UpdateService/FirmwareInventory/%s" % (V1, inventory_id(sid, did))


def task_uri(tid):
    return "%s/TaskService/Tasks/%s" % (V1, tid)


def task_monitor_uri(tid):
    return "%s/TaskService/TaskMonitors/%s" % (V1, tid)


def service_root():
    """The ServiceRoot (served without authentication)."""
    return {
        "@odata.type": "#ServiceRoot.v1_5_0.ServiceRoot",
        "@odata.id": V1 + "/",
        "Id": "RootService",
        "Name": "ironic-accel Redfish BMC emulator",
        "RedfishVersion": "1.11.0",
        "UUID": str(st.UUID_NAMESPACE),
        "Product": "ironic-accel BMC emulator",
        "Systems": _link(V1 + "/Systems"),
        "Chassis": _link(V1 + "/Chassis"),
        "Managers": _link(V1 + "/Managers"),
        "Tasks": _link(V1 + "/TaskService"),
        "SessionService": _link(V1 + "/SessionService"),
        "UpdateService": _link(V1 + "/UpdateService"),
        "Links": {"Sessions": _link(V1 + "/SessionService/Sessions")},
    }


def system_collection(data):
    return _collection("ComputerSystemCollection", V1 + "/Systems",
                       "Computer System Collection",
                       [system_uri(s) for s in sorted(data["systems"], key=_natural)])


def system(sid, rec):
    """A ComputerSystem with the parts Ironic's redfish interfaces touch."""
    uri = system_uri(sid)
    boot = rec["boot"]
    pcie = [d for d in rec["devices"] if d["type"] != "CPU"]
    return {
        "@odata.type": "#ComputerSystem.v1_10_0.ComputerSystem",
        "@odata.id": uri,
        "Id": sid,
        "Name": "Emulated accelerator server %s" % sid,
        "SystemType": "Physical",
        "Manufacturer": "ironic-accel",
        "Model": "Emulated accelerator server",
        "SerialNumber": "EMU-%s" % sid,
        "UUID": rec["uuid"],
        "Status": _OK,
        "PowerState": rec["power_state"],
        "BiosVersion": rec["bios_version"],
        "Boot": {
            "BootSourceOverrideTarget": boot["target"],
            "BootSourceOverrideTarget@Redfish.AllowableValues": BOOT_TARGETS,
            "BootSourceOverrideEnabled": boot["enabled"],
            "BootSourceOverrideMode": boot["mode"],
        },
        "ProcessorSummary": {
            "Count": sum(1 for d in rec["devices"] if d["type"] == "CPU"),
            "Status": _OK,
        },
        "MemorySummary": {"TotalSystemMemoryGiB": 256, "Status": _OK},
        "Processors": _link(uri + "/Processors"),
        "PCIeDevices": [_link(pcie_device_uri(sid, d["id"])) for d in pcie],
        "PCIeDevices@odata.count": len(pcie),
        "Links": {
            "Chassis": [_link(chassis_uri(sid))],
            "ManagedBy": [_link("%s/Managers/%s" % (V1, MANAGER_ID))],
        },
        "Actions": {
            "#ComputerSystem.Reset": {
                "target": uri + "/Actions/ComputerSystem.Reset",
                "ResetType@Redfish.AllowableValues": RESET_TYPES,
            },
        },
    }


def processor_collection(sid, rec):
    return _collection("ProcessorCollection", system_uri(sid) + "/Processors",
                       "Processors Collection",
                       [processor_uri(sid, d["id"]) for d in rec["devices"]
                        if not devices.is_nic(d)])


def processor(sid, dev):
    """A Processor; accelerators carry firmware, PCIe links and ``FPGA``."""
    uri = processor_uri(sid, dev["id"])
    doc = {
        "@odata.type": "#Processor.v1_18_0.Processor",
        "@odata.id": uri,
        "Id": dev["id"],
        "Name": "%s %s" % (dev["manufacturer"], dev["model"]),
        "ProcessorType": dev["type"],
        "Manufacturer": dev["manufacturer"],
        "Model": dev["model"],
        "Status": devices.status(dev),
    }
    if dev["type"] == "CPU":
        doc.update({"Socket": "CPU %s" % dev["id"][3:], "ProcessorArchitecture": "x86",
                    "InstructionSet": "x86-64", "MaxSpeedMHz": 3900,
                    "TotalCores": 20, "TotalThreads": 40})
        return doc
    doc.update({
        "FirmwareVersion": dev["firmware_version"],
        "ProcessorId": {"VendorId": dev["vendor_id"]},
        "Links": {
            "PCIeDevice": _link(pcie_device_uri(sid, dev["id"])),
            "PCIeFunctions": [_link(pcie_function_uri(sid, dev["id"], f["id"]))
                              for f in dev["functions"]],
            "Chassis": _link(chassis_uri(sid)),
        },
    })
    if dev["type"] == "FPGA":
        doc["FPGA"] = {
            "FpgaType": "Discrete",
            "Model": dev["model"],
            "FirmwareId": dev["firmware_id"],
            "FirmwareManufacturer": dev["manufacturer"],
            "FirmwareVersion": dev["firmware_version"],
            "HostInterface": {"InterfaceType": "PCIe",
                              "PCIe": {"PCIeType": "Gen3", "MaxPCIeType": "Gen3",
                                       "LanesInUse": 8, "MaxLanes": 8}},
            "PCIeVirtualFunctions": sum(1 for f in dev["functions"] if f["type"] == "Virtual"),
            "ProgrammableFromHost": True,
            "ReconfigurationSlots": [_slot(sid, dev, s) for s in dev["slots"]],
        }
        doc["AccelerationFunctions"] = _link(uri + "/AccelerationFunctions")
    return doc


def _slot(sid, dev, slot):
    doc = {"SlotId": slot["id"],
           "UUID": st.slot_uuid(sid, dev["id"], slot["id"]),
           "ProgrammableFromHost": slot["programmable_from_host"]}
    if slot["function_id"]:
        doc["AccelerationFunction"] = _link(
            "%s/AccelerationFunctions/%s" % (processor_uri(sid, dev["id"]), slot["id"]))
    return doc


def acceleration_function_collection(sid, dev):
    uri = processor_uri(sid, dev["id"]) + "/AccelerationFunctions"
    return _collection("AccelerationFunctionCollection", uri,
                       "Acceleration Function Collection",
                       ["%s/%s" % (uri, s["id"]) for s in dev["slots"] if s["function_id"]])


def acceleration_function(sid, dev, slot):
    """The function loaded in one slot: its ``UUID`` is the function id."""
    return {
        "@odata.type": "#AccelerationFunction.v1_0_3.AccelerationFunction",
        "@odata.id": "%s/AccelerationFunctions/%s" % (processor_uri(sid, dev["id"]), slot["id"]),
        "Id": slot["id"],
        "Name": "Function in slot %s" % slot["id"],
        "UUID": slot["function_id"],
        "AccelerationFunctionType": "OEM",
        "Manufacturer": dev["manufacturer"],
        "Version": slot["function_version"],
        "FpgaReconfigurationSlots": [st.slot_uuid(sid, dev["id"], slot["id"])],
        "Status": _OK,
        "Links": {"PCIeFunctions": [_link(pcie_function_uri(sid, dev["id"], f["id"]))
                                    for f in dev["functions"]]},
    }


def chassis_collection(data):
    return _collection("ChassisCollection", V1 + "/Chassis", "Chassis Collection",
                       [chassis_uri(s) for s in sorted(data["systems"], key=_natural)])


def chassis(sid):
    uri = chassis_uri(sid)
    return {
        "@odata.type": "#Chassis.v1_14_0.Chassis",
        "@odata.id": uri,
        "Id": sid,
        "Name": "Chassis of system %s" % sid,
        "ChassisType": "RackMount",
        "Manufacturer": "ironic-accel",
        "Status": _OK,
        "PCIeDevices": _link(uri + "/PCIeDevices"),
        "NetworkAdapters": _link(network_adapters_uri(sid)),
        "Links": {"ComputerSystems": [_link(system_uri(sid))],
                  "ManagedBy": [_link("%s/Managers/%s" % (V1, MANAGER_ID))]},
    }


def pcie_device_collection(sid, rec):
    return _collection("PCIeDeviceCollection", chassis_uri(sid) + "/PCIeDevices",
                       "PCIe Device Collection",
                       [pcie_device_uri(sid, d["id"]) for d in rec["devices"]
                        if d["type"] != "CPU"])


def pcie_device(sid, dev):
    uri = pcie_device_uri(sid, dev["id"])
    functions = [_link(pcie_function_uri(sid, dev["id"], f["id"])) for f in dev["functions"]]
    return {
        "@odata.type": "#PCIeDevice.v1_11_1.PCIeDevice",
        "@odata.id": uri,
        "Id": dev["id"],
        "Name": "%s %s" % (dev["manufacturer"], dev["model"]),
        "Manufacturer": dev["manufacturer"],
        "Model": dev["model"],
        "DeviceType": "MultiFunction" if len(functions) > 1 else "SingleFunction",
        "FirmwareVersion": dev["firmware_version"],
        "PCIeInterface": {"PCIeType": "Gen3", "MaxPCIeType": "Gen3",
                          "LanesInUse": 8, "MaxLanes": 8},
        "Status": devices.status(dev),
        "PCIeFunctions": _link(uri + "/PCIeFunctions"),
        "Links": {"Chassis": [_link(chassis_uri(sid))],
                  "PCIeFunctions": functions,
                  "PCIeFunctions@odata.count": len(functions)},
    }


def pcie_function_collection(sid, dev):
    uri = pcie_device_uri(sid, dev["id"]) + "/PCIeFunctions"
    return _collection("PCIeFunctionCollection", uri, "PCIe Function Collection",
                       [pcie_function_uri(sid, dev["id"], f["id"]) for f in dev["functions"]])


def pcie_function(sid, dev, fn):
    """A PCIeFunction; the BDF is in Segment/Bus/Device/FunctionNumber."""
    domain, bus, rest = fn["pci_address"].split(":")
    slot_no, func_no = rest.split(".")
    return {
        "@odata.type": "#PCIeFunction.v1_5_0.PCIeFunction",
        "@odata.id": pcie_function_uri(sid, dev["id"], fn["id"]),
        "Id": str(fn["id"]),
        "Name": "%s function %d" % (dev["model"], fn["id"]),
        "FunctionId": fn["id"],
        "FunctionType": fn["type"],
        "FunctionProtocol": "PCIe",
        "DeviceClass": fn["device_class"],
        "ClassCode": fn["class_code"],
        "DeviceId": fn["device_id"],
        "VendorId": dev["vendor_id"],
        "SubsystemId": fn["device_id"],
        "SubsystemVendorId": dev["vendor_id"],
        "RevisionId": "0x01",
        "SegmentNumber": "0x" + domain,
        "BusNumber": "0x" + bus,
        "DeviceNumber": "0x" + slot_no,
        "FunctionNumber": "0x%02x" % int(func_no),
        "Enabled": True,
        "Status": _OK,
        "Links": _function_links(sid, dev, fn),
    }


def _function_links(sid, dev, fn):
    links = {"PCIeDevice": _link(pcie_device_uri(sid, dev["id"]))}
    if not devices.is_nic(dev):
        links["Processors"] = [_link(processor_uri(sid, dev["id"]))]
    elif fn["type"] == "Physical":
        links["NetworkDeviceFunctions"] = [_link("%s/NetworkDeviceFunctions/%s" % (
            network_adapter_uri(sid, dev["id"]), fn["id"]))]
    return links


def manager_collection():
    return _collection("ManagerCollection", V1 + "/Managers", "Manager Collection",
                       ["%s/Managers/%s" % (V1, MANAGER_ID)])


def manager(data):
    systems = sorted(data["systems"], key=_natural)
    return {
        "@odata.type": "#Manager.v1_10_0.Manager",
        "@odata.id": "%s/Managers/%s" % (V1, MANAGER_ID),
        "Id": MANAGER_ID,
        "Name": "Emulated BMC",
        "ManagerType": "BMC",
        "Model": "ironic-accel BMC emulator",
        "FirmwareVersion": data["manager"]["firmware_version"],
        "UUID": str(st.UUID_NAMESPACE),
        "PowerState": "On",
        "Status": _OK,
        "Links": {"ManagerForServers": [_link(system_uri(s)) for s in systems],
                  "ManagerForChassis": [_link(chassis_uri(s)) for s in systems]},
    }


#: ``--profile`` values: the update shapes real BMCs serve (DSP0266).
#: simple: SimpleUpdate taking Targets (HPE Cray EX recordings, DMTF);
#: simple-no-targets: SimpleUpdate whose ActionInfo has no Targets (the BMC
#: refuses them) beside a MultipartHttpPushUri (OpenBMC's bmcweb);
#: multipart: MultipartHttpPushUri only; httppush: HttpPushUri with
#: HttpPushUriTargets (DMTF public-rackmount1/tower); location-202:
#: SimpleUpdate answering 202 with only a Location header.
UPDATE_PROFILES = ("simple", "simple-no-targets", "multipart", "httppush",
                   "location-202")
SIMPLE_UPDATE_URI = V1 + "/UpdateService/Actions/UpdateService.SimpleUpdate"
ACTION_INFO_URI = V1 + "/UpdateService/SimpleUpdateActionInfo"
MULTIPART_URI = V1 + "/UpdateService/update"
HTTP_PUSH_URI = V1 + "/UpdateService/FWUpdate"


def has_simple_update(profile):
    return profile in ("simple", "simple-no-targets", "location-202")


def update_service(profile="simple", push_targets=()):
    doc = {
        "@odata.type": "#UpdateService.v1_11_0.UpdateService",
        "@odata.id": V1 + "/UpdateService",
        "Id": "UpdateService",
        "Name": "Update Service",
        "ServiceEnabled": True,
        "Status": _OK,
        "FirmwareInventory": _link(V1 + "/UpdateService/FirmwareInventory"),
        "Actions": {},
    }
    if has_simple_update(profile):
        doc["Actions"]["#UpdateService.SimpleUpdate"] = {
            "target": SIMPLE_UPDATE_URI,
            "@Redfish.ActionInfo": ACTION_INFO_URI}
    if profile in ("multipart", "simple-no-targets"):
        doc["MultipartHttpPushUri"] = MULTIPART_URI
    if profile == "httppush":
        doc["HttpPushUri"] = HTTP_PUSH_URI
        doc["HttpPushUriTargets"] = list(push_targets)
        doc["HttpPushUriTargetsBusy"] = False
    return doc


def simple_update_action_info(profile="simple"):
    """The SimpleUpdate ActionInfo (ActionInfo.v1_3_0)."""
    parameters = [
        {"Name": "ImageURI", "Required": True, "DataType": "String"},
        {"Name": "TransferProtocol", "Required": False,
         "DataType": "String",
         "AllowableValues": ["HTTP", "HTTPS", "FILE"]}]
    if profile != "simple-no-targets":
        parameters.append({"Name": "Targets", "Required": False,
                           "DataType": "StringArray"})
    return {
        "@odata.type": "#ActionInfo.v1_3_0.ActionInfo",
        "@odata.id": ACTION_INFO_URI,
        "Id": "SimpleUpdateActionInfo",
        "Name": "SimpleUpdate Action Info",
        "Parameters": parameters,
    }


def inventory_components(data):
    """Every firmware component: ``[(system id, component id)]``."""
    components = [("1", "BMC")]
    for sid in sorted(data["systems"], key=_natural):
        components.append((sid, "BIOS"))
        components.extend((sid, d["id"]) for d in data["systems"][sid]["devices"]
                          if d["type"] != "CPU")
    return components


def component_uri(sid, dev):
    """The resource a device's firmware belongs to: Processor or NetworkAdapter."""
    if devices.is_nic(dev):
        return network_adapter_uri(sid, dev["id"])
    return processor_uri(sid, dev["id"])


def firmware_inventory_collection(data):
    return _collection("SoftwareInventoryCollection", V1 + "/UpdateService/FirmwareInventory",
                       "Firmware Inventory Collection",
                       [inventory_uri(s, c) for s, c in inventory_components(data)])


def software_inventory(data, sid, cid):
    """A FirmwareInventory member; ``RelatedItem`` names the component."""
    if cid == "BMC":
        version = data["manager"]["firmware_version"]
        related, name, maker = "%s/Managers/%s" % (V1, MANAGER_ID), "BMC Firmware", "ironic-accel"
    elif cid == "BIOS":
        version = data["systems"][sid]["bios_version"]
        related, name, maker = system_uri(sid), "BIOS of system %s" % sid, "ironic-accel"
    else:
        dev = next(d for d in data["systems"][sid]["devices"] if d["id"] == cid)
        version, maker = dev["firmware_version"], dev["manufacturer"]
        related, name = component_uri(sid, dev), "%s %s firmware" % (maker, dev["model"])
    return {
        "@odata.type": "#SoftwareInventory.v1_2_0.SoftwareInventory",
        "@odata.id": inventory_uri(sid, cid),
        "Id": inventory_id(sid, cid),
        "Name": name,
        "Manufacturer": maker,
        "Version": version,
        "SoftwareId": cid,
        "Updateable": True,
        "Status": _OK,
        "RelatedItem": [_link(related)],
    }


def task_service():
    return {
        "@odata.type": "#TaskService.v1_1_4.TaskService",
        "@odata.id": V1 + "/TaskService",
        "Id": "TaskService",
        "Name": "Task Service",
        "ServiceEnabled": True,
        "CompletedTaskOverWritePolicy": "Oldest",
        "Status": _OK,
        "Tasks": _link(V1 + "/TaskService/Tasks"),
    }


def task_collection(data):
    return _collection("TaskCollection", V1 + "/TaskService/Tasks", "Task Collection",
                       [task_uri(t) for t in sorted(data["tasks"], key=_natural)])


def task(state, rec):
    """A Task; PercentComplete grows with time while it runs."""
    return {
        "@odata.type": "#Task.v1_4_3.Task",
        "@odata.id": task_uri(rec["id"]),
        "Id": rec["id"],
        "Name": "Firmware update task %s" % rec["id"],
        "TaskMonitor": task_monitor_uri(rec["id"]),
        "TaskState": rec["state"],
        "TaskStatus": rec["status"],
        "PercentComplete": state.percent(rec),
        "StartTime": st.isotime(rec["start_time"]),
        "EndTime": st.isotime(rec["end_time"]),
        "Messages": rec["messages"],
        "Payload": {"TargetUri": V1 + "/UpdateService/Actions/UpdateService.SimpleUpdate",
                    "HttpOperation": "POST",
                    "JsonBody": _json_body(state, rec)},
    }


def _json_body(state, rec):
    targets = []
    for sid, did in rec["targets"]:
        if did in ("BMC", "BIOS"):
            targets.append(inventory_uri(sid, did))
        else:
            try:
                targets.append(component_uri(sid, state.device(sid, did)))
            except exception.NotFound:
                targets.append(processor_uri(sid, did))
    return json.dumps({"ImageURI": rec["image_uri"], "Targets": targets})


def session_service():
    return {
        "@odata.type": "#SessionService.v1_1_8.SessionService",
        "@odata.id": V1 + "/SessionService",
        "Id": "SessionService",
        "Name": "Session Service",
        "ServiceEnabled": True,
        "SessionTimeout": 3600,
        "Status": _OK,
        "Sessions": _link(V1 + "/SessionService/Sessions"),
    }


def session_collection(data):
    return _collection("SessionCollection", V1 + "/SessionService/Sessions",
                       "Session Collection",
                       [session_uri(s) for s in sorted(data["sessions"])])


def session_uri(session_id):
    return "%s/SessionService/Sessions/%s" % (V1, session_id)


def session(session_id, rec):
    return {
        "@odata.type": "#Session.v1_1_0.Session",
        "@odata.id": session_uri(session_id),
        "Id": session_id,
        "Name": "User Session",
        "UserName": rec["user"],
    }


def error(message, message_id="GeneralError", args=(), severity="Warning"):
    """A Redfish error body with one @Message.ExtendedInfo entry."""
    return {"error": {
        "code": "Base.1.8.GeneralError",
        "message": message,
        "@Message.ExtendedInfo": [{
            "@odata.type": "#Message.v1_1_1.Message",
            "MessageId": "Base.1.8.%s" % message_id,
            "Message": message,
            "MessageArgs": [str(a) for a in args],
            "Severity": severity,
            "Resolution": "Correct the request and resubmit it.",
        }],
    }}


def _natural(value):
    """Sort key: numbers numerically, anything else after them."""
    value = str(value)
    return (0, int(value), "") if value.isdigit() else (1, 0, value)
