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


"""The device inventory of an emulated system: validation and defaults.

A device is a plain dict (README.rst, "Device inventory"); every one the
state holds went through :func:`normalize_device`, so the document builders
may rely on each field being there.
"""

import copy
import re

#: Device types: the Redfish ProcessorType values a Processor may have, and
#: ``NIC``, a network adapter (Chassis NetworkAdapters, not a Processor).
DEVICE_TYPES = ("CPU", "GPU", "FPGA", "DSP", "Accelerator", "OEM", "NIC")
#: The most virtual functions one physical function of a NIC may offer.
MAX_VFS = 128
#: A device's ``health``: the Redfish ``Status.Health`` its Processor,
#: PCIe device or network adapter reports.
HEALTH_VALUES = ("OK", "Warning", "Critical")

_ID_RE = re.compile(r"^[A-Za-z0-9_.]+$")
_HEX_RE = re.compile(r"^0x[0-9a-fA-F]{4}$")
_PCI_RE = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-1][0-9a-f]\.[0-7]$")

_CLASS_CODES = {
    "GPU": ("0x030200", "DisplayController"),
    "DSP": ("0x118000", "SignalProcessingController"),
    "NIC": ("0x020000", "NetworkController"),
}
_DEFAULT_CLASS = ("0x120000", "ProcessingAccelerators")


def default_devices():
    """The device inventory of a system whose state names none."""
    return [
        {"id": "CPU0", "type": "CPU", "manufacturer": "Intel(R) Corporation",
         "model": "Intel(R) Xeon(R) Gold 6230 CPU @ 2.10GHz"},
        {"id": "FPGA0", "type": "FPGA", "manufacturer": "Intel",
         "model": "PAC Arria10", "vendor_id": "0x8086", "device_id": "0x0b30",
         "pci_address": "0000:5e:00.0", "firmware_version": "2.0.1",
         "firmware_id": "PAC-A10-FIM",
         "slots": [{"id": "0"}, {"id": "1"}]},
        {"id": "GPU0", "type": "GPU", "manufacturer": "NVIDIA",
         "model": "Tesla T4", "vendor_id": "0x10de", "device_id": "0x1eb8",
         "pci_address": "0000:af:00.0", "firmware_version": "90.04.38.00.03"},
    ]


def _require(cond, message):
    if not cond:
        raise ValueError(message)


def _count(dev, field, where, low, high, default):
    value = dev.setdefault(field, default)
    _require(isinstance(value, int) and not isinstance(value, bool) and low <= value <= high,
             "%s: %s must be an integer %d-%d, got %r" % (where, field, low, high, value))
    return value


def _nic_functions(dev, where):
    """Fill in a NIC's SR-IOV fields and, unless given, its functions.

    PF ``p`` is function ``p``; VF ``k`` of PF ``p`` has routing id
    ``ports + p * max_vfs + k``, the layout of a NIC whose PFs each reserve
    ``max_vfs`` (TotalVFs) routing ids after the last PF (a ConnectX-5 with
    two ports: PFs 3b:00.0 and 3b:00.1, the VFs of PF 0 from 3b:00.2).
    """
    ports = _count(dev, "ports", where, 1, 8, 1)
    max_vfs = _count(dev, "max_vfs", where, 0, MAX_VFS, 8)
    vfs = _count(dev, "vfs", where, 0, max_vfs, 0)
    _require(ports * (1 + max_vfs) <= 256,
             "%s: ports * (1 + max_vfs) routing ids must fit in 256" % where)
    vf_device_id = dev.setdefault("vf_device_id", dev["device_id"])
    _require(isinstance(vf_device_id, str) and _HEX_RE.match(vf_device_id),
             "%s: vf_device_id must look like 0x1018, got %r" % (where, vf_device_id))
    dev["vf_device_id"] = vf_device_id.lower()
    if "functions" in dev:
        return
    functions = [{"id": p, "type": "Physical"} for p in range(ports)]
    functions.extend({"id": ports + p * max_vfs + k, "type": "Virtual",
                      "device_id": dev["vf_device_id"], "physical_function": p}
                     for p in range(ports) for k in range(vfs))
    dev["functions"] = functions


def _function_address(dev, fn, where, n):
    domain, bus, rest = dev["pci_address"].split(":")
    slot_no = int(rest.split(".")[0], 16) + fn["id"] // 8
    _require(slot_no <= 0x1f, "%s: functions[%d] (id %d) is beyond device 1f of bus %s"
             % (where, n, fn["id"], bus))
    return "%s:%s:%02x.%d" % (domain, bus, slot_no, fn["id"] % 8)


def normalize_device(spec, where="device"):
    """Validate a device description and fill in its defaults.

    :param spec: a dict as documented in README.rst ("Device inventory").
    :param where: names the device in error messages.
    :returns: a new, complete dict.
    :raises: ValueError naming the bad field.
    """
    _require(isinstance(spec, dict), "%s: must be a JSON object" % where)
    dev = copy.deepcopy(spec)
    did = dev.get("id")
    _require(isinstance(did, str) and _ID_RE.match(did),
             "%s: id must match %s, got %r" % (where, _ID_RE.pattern, did))
    where = "device %s" % did
    _require(dev.get("type") in DEVICE_TYPES,
             "%s: type must be one of %s, got %r"
             % (where, ", ".join(DEVICE_TYPES), dev.get("type")))
    dev.setdefault("manufacturer", "Emulated")
    dev.setdefault("model", "Emulated %s" % dev["type"])
    dev.setdefault("health", "OK")
    _require(dev["health"] in HEALTH_VALUES,
             "%s: health must be one of %s, got %r"
             % (where, ", ".join(HEALTH_VALUES), dev["health"]))
    if dev["type"] == "CPU":
        return dev
    for field in ("vendor_id", "device_id"):
        _require(isinstance(dev.get(field), str) and _HEX_RE.match(dev[field]),
                 "%s: %s must look like 0x8086, got %r" % (where, field, dev.get(field)))
        dev[field] = dev[field].lower()
    _require(isinstance(dev.get("pci_address"), str) and _PCI_RE.match(dev["pci_address"]),
             "%s: pci_address must look like 0000:5e:00.0, got %r"
             % (where, dev.get("pci_address")))
    dev.setdefault("firmware_version", "1.0.0")
    _require(isinstance(dev["firmware_version"], str) and dev["firmware_version"],
             "%s: firmware_version must be a non-empty string" % where)
    dev.setdefault("firmware_id", None)
    if dev["type"] == "NIC":
        _nic_functions(dev, where)
    class_code, device_class = _CLASS_CODES.get(dev["type"], _DEFAULT_CLASS)
    functions = dev.setdefault("functions", [{"id": 0}])
    _require(isinstance(functions, list) and functions,
             "%s: functions must be a non-empty list" % where)
    for n, fn in enumerate(functions):
        _require(isinstance(fn, dict) and isinstance(fn.get("id"), int)
                 and 0 <= fn["id"] <= 255,
                 "%s: functions[%d].id must be an integer 0-255" % (where, n))
        fn.setdefault("type", "Physical" if fn["id"] == 0 else "Virtual")
        _require(fn["type"] in ("Physical", "Virtual"),
                 "%s: functions[%d].type must be Physical or Virtual" % (where, n))
        fn.setdefault("class_code", class_code)
        fn.setdefault("device_class", device_class)
        fn.setdefault("device_id", dev["device_id"])
        fn.setdefault("pci_address", _function_address(dev, fn, where, n))
        _require(_PCI_RE.match(fn["pci_address"]),
                 "%s: functions[%d].pci_address is malformed" % (where, n))
    ids = [fn["id"] for fn in functions]
    _require(len(ids) == len(set(ids)), "%s: function ids must be unique" % where)
    if dev["type"] == "NIC":
        _physical_functions(dev, where)
    slots = dev.setdefault("slots", [])
    _require(isinstance(slots, list), "%s: slots must be a list" % where)
    _require(not slots or dev["type"] == "FPGA",
             "%s: only an FPGA has reconfiguration slots" % where)
    seen = set()
    for n, slot in enumerate(slots):
        _require(isinstance(slot, dict) and isinstance(slot.get("id"), str)
                 and _ID_RE.match(slot["id"]) and slot["id"] not in seen,
                 "%s: slots[%d].id must be a unique string matching %s"
                 % (where, n, _ID_RE.pattern))
        seen.add(slot["id"])
        slot.setdefault("function_id", None)
        slot.setdefault("function_version", None)
        slot.setdefault("programmable_from_host", True)
    return dev


def _physical_functions(dev, where):
    """Tie every VF of a NIC to one of its PFs (``physical_function``)."""
    physical = sorted(fn["id"] for fn in dev["functions"] if fn["type"] == "Physical")
    _require(physical, "%s: a NIC needs a Physical function" % where)
    for n, fn in enumerate(dev["functions"]):
        if fn["type"] == "Physical":
            fn.pop("physical_function", None)
            continue
        fn.setdefault("physical_function", physical[0])
        _require(fn["physical_function"] in physical,
                 "%s: functions[%d].physical_function must be the id of a Physical "
                 "function (%s), got %r" % (where, n, ", ".join(map(str, physical)),
                                            fn["physical_function"]))


def normalize_devices(specs, system_id):
    """Validate the device list of one system (ids must be unique)."""
    _require(isinstance(specs, list), "system %s: devices must be a list" % system_id)
    devices = [normalize_device(s, "system %s devices[%d]" % (system_id, n))
               for n, s in enumerate(specs)]
    ids = [d["id"] for d in devices]
    _require(len(ids) == len(set(ids)), "system %s: device ids must be unique" % system_id)
    return devices


def status(dev):
    """The Redfish ``Status`` of a device's own resources."""
    return {"State": "Enabled", "Health": dev.get("health", "OK")}


def is_nic(dev):
    """True for a network adapter (served under NetworkAdapters, not Processors)."""
    return dev["type"] == "NIC"


def physical_functions(dev):
    """The physical functions of a device, lowest id first."""
    return sorted((fn for fn in dev.get("functions", ()) if fn["type"] == "Physical"),
                  key=lambda fn: fn["id"])
