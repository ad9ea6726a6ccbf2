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

"""Inventory refresh: Redfish -> inventory document, node traits, firmware.

:func:`build_document` turns what the BMC reports into the inventory
document (doc/source/architecture.rst, "The inventory document"; pure,
unit-tested with recorded Redfish JSON);
:func:`refresh` reads the BMC through the gateway and writes the document to
``node.extra``, the node traits and the node's cached firmware components,
then hands the document to the Placement reporter.
"""

import datetime
import importlib
import re

from ironic import objects
from ironic.common import exception
from ironic.conf import CONF
from oslo_log import log as logging
from sushy.resources.system import constants as sys_cons

from accel_common import exception as common_exception
from accel_common import inventory
from ironic_accel import conf as accel_conf
from ironic_accel import exception as accel_exception
from ironic_accel.redfish import inventory as redfish_inventory

LOG = logging.getLogger(__name__)

accel_conf.register_opts(CONF)

#: Node trait saying the node has a device of a type, e.g. CUSTOM_ACCEL_FPGA.
TYPE_TRAIT_PREFIX = "CUSTOM_ACCEL_"
#: Every trait the refresh owns on a node; others are left alone, deploy
#: template traits such as CUSTOM_ACCEL_PROGRAM_<X> included.
TYPE_TRAITS = frozenset(TYPE_TRAIT_PREFIX + t for t in inventory.DEVICE_TYPES)

#: Firmware component name prefix, like Ironic's own ``nic:``.
COMPONENT_PREFIX = "accel:"

_RESOURCE_CLASSES = {"FPGA": "FPGA", "GPU": "PGPU"}
# NOTE(ironic-accel): Redfish says "Accelerator" for anything else; the PCI
# class of the device tells a SmartNIC from a generic accelerator.
_CLASS_TYPES = {
    sys_cons.DeviceClass.NETWORK_CONTROLLER: "NIC",
}


def type_trait(device_type):
    """The node trait for a device type, e.g. ``CUSTOM_ACCEL_GPU``."""
    return TYPE_TRAIT_PREFIX + device_type


def is_owned_trait(trait):
    """True for the node traits the refresh computes (and may remove)."""
    return (trait in TYPE_TRAITS
            or trait.startswith(inventory.FUNCTION_TRAIT_PREFIX))


def _hex_id(value):
    """A PCI id as ``0x%04x``, from any spelling BMCs use, or None.

    ``"0x10DE"`` (the schema's), ``"10de"`` (no prefix: PCI ids are
    written in hex), a JSON number (``4318``: decimal, as JSON numbers
    are). Anything else, or a value beyond 16 bits, is None.
    """
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        number = value
    else:
        text = str(value).strip().lower()
        if not re.fullmatch(r"(0x)?[0-9a-f]{1,4}", text):
            return None
        number = int(text, 16)
    if not 0 <= number <= 0xFFFF:
        return None
    return f"0x{number:04x}"


def _number(value):
    if value is None:
        return None
    if isinstance(value, int):
        return value
    text = str(value).strip().lower()
    try:
        return int(text, 16) if text.startswith("0x") else int(text)
    except ValueError:
        return None


def pci_address(function):
    """The BDF of a sushy PCIeFunction, or None when it says too little."""
    parts = [_number(function.segment_number) or 0,
             _number(function.bus_number), _number(function.device_number),
             _number(function.function_number)]
    if parts[3] is None:
        parts[3] = _number(function.function_id)
    if None in parts:
        return None
    return "%04x:%02x:%02x.%x" % tuple(parts)


def _device_id(identity):
    return re.sub(r"[^A-Za-z0-9._-]", "_", identity).lower()[:64]


def _unique_id(proc_or_device, used, system=None):
    """A device id unique in the document, stable across refreshes.

    The Redfish Id, as before; prefixed with the System's Id when another
    device of the document already has it (an accelerator baseboard's
    ``GPU_0`` next to a host's), then numbered.
    """
    candidate = _device_id(proc_or_device.identity)
    if candidate in used and system:
        candidate = _device_id(f"{system}-{proc_or_device.identity}")
    base, number = candidate, 2
    while candidate in used:
        suffix = f"-{number}"
        candidate = base[:64 - len(suffix)] + suffix
        number += 1
    used.add(candidate)
    return candidate


def _device_type(proc, functions):
    if proc is not None and proc.processor_type == sys_cons.ProcessorType.FPGA:
        return "FPGA"
    if proc is not None and proc.processor_type == sys_cons.ProcessorType.GPU:
        return "GPU"
    for function in functions:
        if function.device_class in _CLASS_TYPES:
            return _CLASS_TYPES[function.device_class]
    if proc is None and any(_class_code(f) == _CLASS_3D for f in functions):
        return "GPU"
    if any(_class_code(f) == _CLASS_COPROCESSOR
           and _hex_id(f.vendor_id) == _INTEL for f in functions):
        return "QAT"
    return "PCI"


def _resource_class(device_type):
    return _RESOURCE_CLASSES.get(device_type, "CUSTOM_" + device_type)


def _same(uri, other):
    return bool(uri) and bool(other) and uri.rstrip("/") == other.rstrip("/")


def _links_to(function, proc):
    """True when a function's links name the processor.

    ``Links.Processor`` is the schema's (PCIeFunction v1_6, an object);
    ``Links.Processors`` (a list) is seen on older services.
    """
    links = function.links or {}
    linked = links.get("Processor")
    linked = [linked] if isinstance(linked, dict) else []
    processors = links.get("Processors")
    if isinstance(processors, list):
        linked.extend(processors)
    return any(isinstance(link, dict)
               and _same(link.get("@odata.id"), proc.path)
               for link in linked)


def _pcie_for(proc, pcie):
    """The PCIe device and functions that belong to a processor.

    By the processor's ``Links.PCIeDevice`` or ``Links.PCIeFunctions``,
    then by a function's link back to the processor, then by a PCIe device
    with the processor's Id when exactly one has it. When the processor
    links functions, only those are its own (a CXL device may carry
    functions of other processors).
    """
    function_uris = {uri.rstrip("/") for uri in proc.pcie_function_uris}
    for device, functions in pcie:
        if _same(proc.pcie_device_uri, device.path):
            return device, functions
        linked = [f for f in functions if f.path.rstrip("/") in function_uris]
        if linked:
            return device, linked
    for device, functions in pcie:
        linked = [f for f in functions if _links_to(f, proc)]
        if linked:
            return device, linked
    same_id = [(d, f) for d, f in pcie if d.identity == proc.identity]
    if len(same_id) == 1:
        return same_id[0]
    return None, []


def _physical_function(functions):
    physical = [f for f in functions
                if f.function_type != sys_cons.FunctionType.VIRTUAL]
    candidates = physical or functions
    return min(candidates, key=lambda f: _number(f.function_number)
               or _number(f.function_id) or 0, default=None)


def _class_code(function):
    number = _number(function.class_code)
    return None if number is None else number >> 8


#: PCI class codes (class, subclass) of accelerators a BMC may list only as
#: PCIe devices: 0x0302 3D controller (datacenter GPUs), 0x1200 processing
#: accelerator. 0x0300 (VGA) is left out: every BMC's own display is one.
_CLASS_3D = 0x0302
#: 0x0b40 co-processor: Intel's QuickAssist cards (C62x 0x37c8, 4xxx
#: 0x4940/0x4942, ...) carry it, as the host agent's ``pci`` driver reads
#: it, so both sides call the card QAT and pair it.
_CLASS_COPROCESSOR = 0x0b40
_INTEL = "0x8086"
_ACCELERATOR_CLASSES = frozenset({_CLASS_3D, 0x1200})


def _is_pcie_accelerator(functions):
    function = _physical_function(functions)
    if function is None:
        return False
    return (function.device_class
            == sys_cons.DeviceClass.PROCESSING_ACCELERATORS
            or _class_code(function) in _ACCELERATOR_CLASSES)


def _regions(node_uuid, device_id, device_type, proc):
    resource_class = _resource_class(device_type)
    slots = proc.slot_functions if proc is not None and proc.fpga else {}

    def function_id(function):
        # NOTE(ironic-accel): the nil UUID (DMTF's mockups put it in every
        # UUID) names no function.
        if function is None or not function.uuid or (
                function.uuid.strip("0-") == ""):
            return None
        return function.uuid

    if len(slots) > 1:
        return "dynamic", [
            {"id": slot_id,
             "rp_uuid": inventory.region_rp_uuid(node_uuid, device_id,
                                                 slot_id),
             "resource_class": resource_class,
             "function_id": function_id(function)}
            for slot_id, function in slots.items()]
    loaded = [function_id(f) for f in slots.values() if f is not None]
    return "single", [
        {"id": "0",
         "rp_uuid": inventory.region_rp_uuid(node_uuid, device_id, "0"),
         "resource_class": resource_class,
         "function_id": loaded[0] if loaded else None}]


def _processor_vendor_id(proc):
    # NOTE(ironic-accel): ProcessorId.VendorId holds a PCI id on some
    # accelerators and a CPUID string ("GenuineIntel") on CPUs; only an id
    # that reads as one is taken.
    return _hex_id(proc.processor_vendor_id)


#: Redfish ``Status.Health`` values, best first.
_HEALTH_ORDER = inventory.HEALTH_VALUES


def _health(*resources):
    """The worst ``Status.Health`` the resources (a Processor, a PCIe
    device or network adapter; None skipped) report, as the inventory
    document writes it; None when none reports one."""
    found = []
    for resource in resources:
        status = (getattr(resource, "status", None)
                  if resource is not None else None)
        value = getattr(getattr(status, "health", None), "value", None)
        if value in _HEALTH_ORDER:
            found.append(_HEALTH_ORDER.index(value))
    return _HEALTH_ORDER[max(found)] if found else None


def _describe_device(node_uuid, device_id, device_type, proc, device,
                     functions, version):
    function = _physical_function(functions)
    address = pci_address(function) if function is not None else None
    vendor_id = (_hex_id(function.vendor_id) if function is not None
                 else None) or (_processor_vendor_id(proc) if proc else None)
    product_id = (_hex_id(function.device_id) if function is not None
                  else None)
    program_mode, regions = _regions(node_uuid, device_id, device_type,
                                     proc)
    fpga = proc.fpga if proc is not None else None
    entry = {
        "id": device_id,
        "type": device_type,
        "vendor_id": vendor_id,
        "product_id": product_id,
        "vendor": ((proc.manufacturer if proc is not None else None)
                   or (device.manufacturer if device else None)),
        "model": ((proc.model if proc is not None else None)
                  or (fpga.model if fpga else None)
                  or (device.model if device else None)),
        "pci_address": address,
        "redfish_uri": proc.path if proc is not None else device.path,
        "firmware_version": (version
                             or (proc.firmware_version
                                 if proc is not None else None)
                             or (device.firmware_version
                                 if device else None)),
        "program_mode": program_mode,
        "regions": regions,
    }
    health = _health(proc, device)
    if health is not None:
        # NOTE(ironic-accel): written only when the BMC says something, so
        # a document of a BMC without Status stays readable by a
        # cyborg_lite that predates the field.
        entry["health"] = health
    return entry


def _is_sriov_nic(reading):
    return reading.adapter.sriov_capable or any(
        f.offers_virtual_functions for f in reading.device_functions)


def build_document(node_uuid, host, processors, pcie, firmware_inventory,
                   now=None, network_adapters=()):
    """Build and validate the inventory document.

    Every accelerator Processor becomes a device, with what the BMC says
    about it: its PCIe function (address, vendor and product ids) when one
    is linked or links back, else none of those (the host agent completes
    them in-band, doc/source/architecture.rst). Every network adapter with
    SR-IOV becomes a NIC device, its physical function's address and ids
    when the BMC gives them (never its virtual functions: those are the
    host agent's). PCIe devices neither claims become devices only when
    their PCI class says accelerator (3D controller, processing
    accelerator). What is left out is logged.

    :param node_uuid: the Ironic node uuid.
    :param host: the compute host name the document names.
    :param processors: accelerator Processors (gateway objects).
    :param pcie: ``(PCIeDevice, [PCIeFunction])`` pairs.
    :param firmware_inventory: SoftwareInventory members.
    :param network_adapters: network adapters as read
        (:data:`ironic_accel.redfish.inventory.NetworkAdapterReading`).
    :returns: the document (doc/source/architecture.rst), of the lowest
        schema version that holds it
        (:func:`accel_common.inventory.version_for`).
    :raises: accel_common.exception.InvalidInventory if the BMC's answers
        make an invalid document.
    """
    versions = redfish_inventory.firmware_versions_by_processor(
        firmware_inventory, processors)
    devices, used, claimed = [], set(), set()
    for proc in processors:
        device, functions = _pcie_for(proc, pcie)
        if device is not None:
            claimed.add(device.path.rstrip("/"))
        device_id = _unique_id(proc, used, proc.system_identity)
        version = versions.get(proc.path.rstrip("/"), (None, None))[1]
        entry = _describe_device(node_uuid, device_id,
                                 _device_type(proc, functions), proc, device,
                                 functions, version)
        missing = [f for f in inventory.IN_BAND_FIELDS if not entry[f]]
        if missing:
            LOG.info("Node %(node)s: accelerator %(uri)s has no %(what)s "
                     "in Redfish; listed by its Redfish identity, the host "
                     "agent completes it in-band",
                     {"node": node_uuid, "uri": proc.path,
                      "what": ", ".join(missing)})
        devices.append(entry)
    for reading in network_adapters:
        adapter = reading.adapter
        if not _is_sriov_nic(reading):
            LOG.debug("Node %(node)s: network adapter %(uri)s reports no "
                      "SR-IOV; left out", {"node": node_uuid,
                                           "uri": adapter.path})
            continue
        claimed.update(uri.rstrip("/") for uri in reading.pcie_device_uris)
        devices.append(_describe_device(
            node_uuid, _unique_id(adapter, used), "NIC", None, adapter,
            reading.pcie_functions,
            versions.get(adapter.path.rstrip("/"), (None, None))[1]))
    for device, functions in pcie:
        if device.path.rstrip("/") in claimed:
            continue
        if not _is_pcie_accelerator(functions):
            LOG.debug("Node %(node)s: PCIe device %(uri)s is not an "
                      "accelerator by its class; left out",
                      {"node": node_uuid, "uri": device.path})
            continue
        device_id = _unique_id(device, used)
        devices.append(_describe_device(
            node_uuid, device_id, _device_type(None, functions), None,
            device, functions,
            versions.get(device.path.rstrip("/"), (None, None))[1]))
    now = now or datetime.datetime.now(datetime.timezone.utc)
    document = {
        "schema_version": inventory.version_for(devices),
        "node_uuid": node_uuid,
        "host": host,
        "refreshed_at": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "devices": devices,
    }
    return inventory.validate(document)


def compute_host(node):
    """The compute host name of a node, per ``compute_host_source``."""
    source = CONF.ironic_accel.compute_host_source
    value = None
    if source == "name":
        value = node.name
    elif "{" in source:
        value = (source.format(name=node.name, uuid=node.uuid)
                 if node.name or "{name}" not in source else None)
    else:
        field, key = source.split(":", 1)
        value = (getattr(node, field) or {}).get(key)
    if not value or not isinstance(value, str):
        LOG.debug("Node %(node)s has no %(source)s; the inventory names "
                  "the node uuid as host", {"node": node.uuid,
                                             "source": source})
        value = node.uuid
    return value


def document_traits(document):
    """The node traits a document implies."""
    traits = set()
    for device in document["devices"]:
        traits.add(type_trait(device["type"]))
        vendor = device.get("vendor") or device.get("vendor_id")
        for region in device["regions"]:
            if region.get("function_id"):
                traits.add(inventory.function_trait(
                    vendor_fragment(vendor), region["function_id"]))
    return traits


def vendor_fragment(vendor):
    """The vendor part of a trait: the first word, e.g. ``Intel``."""
    words = re.findall(r"[A-Za-z0-9]+", vendor or "")
    return words[0] if words else "UNKNOWN"


def _sync_traits(task, wanted):
    node = task.node
    current = set(node.traits.get_trait_names()) if node.traits else set()
    for trait in sorted(wanted - current):
        objects.Trait(task.context, node_id=node.id, trait=trait).create()
    for trait in sorted(t for t in current - wanted if is_owned_trait(t)):
        objects.Trait.destroy(task.context, node.id, trait)
    if wanted != {t for t in current if is_owned_trait(t)}:
        node.traits = objects.TraitList.get_by_node_id(task.context, node.id)
        # NOTE(ironic-accel): traits are written through Trait objects;
        # Node.save() refuses a changed traits field.
        node.obj_reset_changes(fields=["traits"])


def firmware_components(document):
    """Firmware component records (Ironic's format) for the accelerators."""
    return [{"component": COMPONENT_PREFIX + device["id"],
             "current_version": device["firmware_version"],
             "vendor": device.get("vendor"),
             "model": device.get("model"),
             "serial_number": None}
            for device in document["devices"] if device["firmware_version"]]


def sync_firmware_components(task, components):
    """Create or update the node's cached firmware components.

    The same bookkeeping as Ironic's RedfishFirmware: a changed version
    moves into ``last_version_flashed``.

    :param components: dicts with component, current_version, vendor, model
        and serial_number.
    """
    create, update, _unchanged = (
        objects.FirmwareComponentList.sync_firmware_components(
            task.context, task.node.id, components))
    for new in create:
        objects.FirmwareComponent(
            task.context, node_id=task.node.id, component=new["component"],
            current_version=new["current_version"],
            vendor=new.get("vendor"), model=new.get("model"),
            serial_number=new.get("serial_number")).create()
    for changed in update:
        record = objects.FirmwareComponent.get(
            task.context, node_id=task.node.id, name=changed["component"])
        if record.current_version != changed["current_version"]:
            record.last_version_flashed = changed["current_version"]
            record.current_version = changed["current_version"]
        record.vendor = changed.get("vendor")
        record.model = changed.get("model")
        record.serial_number = changed.get("serial_number")
        record.save()


def cache_firmware_components(task, document):
    """Add or update the accelerators in the node's firmware components.

    So ``GET /v1/nodes/{node}/firmware`` lists them next to BIOS and BMC.
    """
    components = firmware_components(document)
    if components:
        sync_firmware_components(task, components)


def read_document(node):
    """Read the BMC and build the node's document (no writes).

    :raises: AcceleratorBMCError, BMCUnavailable, InvalidInventory.
    """
    processors = redfish_inventory.get_accelerator_processors(node)
    pcie = redfish_inventory.get_pcie_devices(node, processors)
    adapters = redfish_inventory.get_network_adapters(node)
    firmware = (redfish_inventory.get_firmware_inventory(node)
                if processors or pcie or adapters else [])
    return build_document(node.uuid, compute_host(node), processors, pcie,
                          firmware, network_adapters=adapters)


def report_to_placement(node, document):
    """Hand the document to the Placement reporter, if it is installed.

    Placement trouble never fails a step: the reporter's own periodic
    retries, so errors are only logged.
    """
    try:
        placement = importlib.import_module("ironic_accel.placement")
    except ImportError:
        return
    report = getattr(placement, "report_after_refresh", None)
    if report is None:
        return
    try:
        report(node, document)
    except accel_exception.ParentNotFound as exc:
        LOG.warning("Node %s: accelerators not reported to Placement: %s",
                    node.uuid, exc)
    except Exception:
        LOG.exception("Node %s: reporting the accelerator inventory to "
                      "Placement failed; the reporter's periodic retries",
                      node.uuid)


def refresh(task):
    """Refresh the accelerator inventory of ``task.node``.

    Writes ``node.extra["accelerators"]``, the node traits the document
    implies and the accelerator firmware components, then reports to
    Placement. Needs an exclusive lock.

    :returns: the document.
    :raises: AcceleratorBMCError, BMCUnavailable when the BMC fails;
        InvalidInventory (as InvalidParameterValue) when its answers do not
        make a valid document.
    """
    node = task.node
    try:
        document = read_document(node)
    except common_exception.InvalidInventory as exc:
        raise exception.InvalidParameterValue(
            f"Node {node.uuid}: the BMC's accelerator inventory is invalid: "
            f"{exc}")
    extra = dict(node.extra or {})
    extra[inventory.NODE_EXTRA_KEY] = document
    node.extra = extra
    _sync_traits(task, document_traits(document))
    node.save()
    cache_firmware_components(task, document)
    LOG.info("Node %(node)s: accelerator inventory refreshed, %(count)d "
             "device(s)", {"node": node.uuid,
                           "count": len(document["devices"])})
    report_to_placement(node, document)
    return document
