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

"""Reading a node's accelerators from its BMC: processors, PCIe devices,
network adapters and the firmware inventory, wherever the BMC puts them,
and tying firmware inventory members to the processors they belong to."""

import collections
import re

from oslo_log import log as logging
from sushy.resources.system import constants as sys_cons
from sushy.resources.system import pcie_device
from sushy.resources.updateservice import softwareinventory

from ironic_accel.redfish import client as bmc
from ironic_accel.redfish import fields

LOG = logging.getLogger(__name__)


def _processors_of(client, system_json, system_id):
    path = (system_json.get('Processors') or {}).get('@odata.id')
    if not path:
        return []
    collection = fields.AcceleratorProcessorCollection(
        client.connector, path, redfish_version=client.root.redfish_version,
        registries=client.root.lazy_registries, root=client.root)
    processors = collection.get_members()
    for proc in processors:
        proc.system_identity = system_id
    return processors


def _baseboard_systems(client, node, system_json):
    """Other Systems of the service that hold only accelerators.

    An NVIDIA HGX baseboard is published as a second System whose
    Processors are GPUs (and the baseboard FPGA), next to the host System
    the node is. They belong to the node only when the node's System is
    the service's one host: a service with several hosts (an HPE Cray EX
    blade with Node0 and Node1) cannot say whose a baseboard is, so none
    is taken and a warning names them.
    """
    root_json = client.root.json
    collection = (root_json.get('Systems') or {}).get('@odata.id')
    if not collection:
        return []
    members = fields.uris(bmc.get_json(client, collection).get('Members'))
    own = system_json.get('@odata.id', '').rstrip('/')
    others = [uri for uri in members if uri.rstrip('/') != own]
    if not others:
        return []
    hosts, boards = [], []
    for uri in others:
        other = bmc.get_json(client, uri)
        procs = _processors_of(client, other, other.get('Id') or uri)
        if any(p.processor_type == sys_cons.ProcessorType.CPU
               for p in procs):
            hosts.append(uri)
        elif any(p.is_accelerator for p in procs):
            boards.append((uri, procs))
    if boards and hosts:
        LOG.warning("BMC of node %(node)s: System(s) %(boards)s hold only "
                    "accelerators, but the service has other host "
                    "System(s) %(hosts)s; whose they are is not known, so "
                    "they are left out", {
                        "node": node.uuid,
                        "boards": ", ".join(u for u, _ in boards),
                        "hosts": ", ".join(hosts)})
        return []
    return boards


def get_accelerator_processors(node):
    """The node's Processors of type FPGA, GPU or Accelerator.

    The node's own System first, then the accelerator-only Systems of the
    service when the node's System is its one host (see
    :func:`_baseboard_systems`).

    :returns: a list of :class:`AcceleratorProcessor`, each fully read
        (its FPGA object and acceleration functions too), with
        ``system_identity`` set.
    :raises: AcceleratorBMCError, BMCUnavailable.
    """
    def read(client):
        system = bmc.system(client, node)
        processors = [p for p in _processors_of(client, system.json,
                                                system.identity)
                      if p.is_accelerator]
        for uri, procs in _baseboard_systems(client, node, system.json):
            LOG.debug("Node %(node)s: accelerators of System %(uri)s taken "
                      "as the node's", {"node": node.uuid, "uri": uri})
            processors.extend(p for p in procs if p.is_accelerator)
        for proc in processors:
            proc.slot_functions  # read the functions while retries apply
        return processors
    return bmc.call(node, None, "GET Processors", read)


def _pcie_device(client, uri):
    return pcie_device.PCIeDevice(
        client.connector, uri, redfish_version=client.root.redfish_version,
        registries=client.root.lazy_registries, root=client.root)


def _pcie_function(client, uri):
    return pcie_device.PCIeFunction(
        client.connector, uri, redfish_version=client.root.redfish_version,
        registries=client.root.lazy_registries, root=client.root)


def _functions_of(client, node, device):
    """A device's PCIe functions: its collection, else its links."""
    path = (device.json.get('PCIeFunctions') or {}).get('@odata.id')
    if path:
        members = bmc.optional(node, f"GET {path}", lambda: fields.uris(
            bmc.get_json(client, path).get('Members')))
        uris = members or []
    else:
        # NOTE(ironic-accel): PCIeDevice v1_0 to v1_3 list the functions
        # in Links.PCIeFunctions; the collection came with v1_4.
        uris = fields.link_uris((device.links or {}).get('PCIeFunctions'))
    functions = []
    for uri in uris:
        function = bmc.optional(node, f"GET {uri}", _pcie_function, client,
                                uri)
        if function is not None:
            functions.append(function)
    return functions


def _software(client, uri):
    return softwareinventory.SoftwareInventory(
        client.connector, uri, redfish_version=client.root.redfish_version,
        registries=client.root.lazy_registries, root=client.root)


def _function_device_uri(function_uri):
    head, sep, _tail = function_uri.rstrip('/').rpartition('/PCIeFunctions/')
    return head if sep else None


def get_pcie_devices(node, processors=()):
    """The PCIe devices that may hold the node's accelerators.

    As ``(device, [functions])`` pairs, from every place Redfish puts
    them: the System's ``PCIeDevices`` (the older place), the PCIe devices
    of the chassis the System links (the newer one), and whatever the
    accelerator ``processors`` link (``Links.PCIeDevice``,
    ``Links.PCIeFunctions``, e.g. an HGX baseboard's
    ``Chassis/HGX_GPU_SXM_1/PCIeDevices/GPU_SXM_1``). Each device once. A
    device's functions come from its ``PCIeFunctions`` collection or, on
    older BMCs, its ``Links.PCIeFunctions``.

    :param processors: the accelerator processors (gateway objects).
    :returns: a list; empty when the BMC lists no PCIe devices.
    :raises: AcceleratorBMCError, BMCUnavailable.
    """
    def read(client):
        system = bmc.system(client, node)
        uris = []
        links = system.json.get('PCIeDevices')
        if isinstance(links, list):
            uris.extend(fields.uris(links))
        elif isinstance(links, dict) and links.get('@odata.id'):
            uris.extend(fields.uris(bmc.get_json(
                client, links['@odata.id']).get('Members')))
        chassis = fields.link_uris(
            (system.json.get('Links') or {}).get('Chassis'))
        for proc in processors:
            chassis.extend(u for u in proc.chassis_uris if u not in chassis)
        for uri in chassis:
            body = bmc.optional(node, f"GET {uri}", bmc.get_json, client, uri)
            path = ((body or {}).get('PCIeDevices') or {}).get('@odata.id')
            if path:
                uris.extend(fields.uris((bmc.optional(
                    node, f"GET {path}", bmc.get_json, client, path)
                    or {}).get('Members')))
        linked_functions = []
        for proc in processors:
            if proc.pcie_device_uri:
                uris.append(proc.pcie_device_uri)
            for function_uri in proc.pcie_function_uris:
                linked_functions.append(function_uri)
                device_uri = _function_device_uri(function_uri)
                if device_uri:
                    uris.append(device_uri)
        found, seen = [], set()
        for uri in uris:
            key = uri.rstrip('/')
            if key in seen:
                continue
            seen.add(key)
            device = bmc.optional(node, f"GET {uri}", _pcie_device, client,
                                  uri)
            if device is None:
                continue
            found.append((device, _functions_of(client, node, device)))
        known = {f.path.rstrip('/') for _, functions in found
                 for f in functions}
        for uri in linked_functions:
            if uri.rstrip('/') in known:
                continue
            # NOTE(ironic-accel): a function linked from a processor but
            # not listed by its device still tells the ids.
            function = bmc.optional(node, f"GET {uri}", _pcie_function, client,
                                 uri)
            device_uri = _function_device_uri(uri)
            for device, functions in found:
                if device_uri and device.path.rstrip('/') == device_uri:
                    if function is not None:
                        functions.append(function)
                    break
            known.add(uri.rstrip('/'))
        return found
    return bmc.call(node, None, "GET PCIeDevices", read)


#: A network adapter as read: the adapter (:class:`fields.NetworkAdapter`),
#: its network device functions, the PCIe functions they link or its
#: controllers' PCIe devices hold, and the URIs of those PCIe devices.
NetworkAdapterReading = collections.namedtuple(
    'NetworkAdapterReading',
    ['adapter', 'device_functions', 'pcie_functions', 'pcie_device_uris'])


def _resource(cls, client, uri):
    return cls(client.connector, uri,
               redfish_version=client.root.redfish_version,
               registries=client.root.lazy_registries, root=client.root)


def _members(client, node, path):
    if not path:
        return []
    body = bmc.optional(node, f"GET {path}", bmc.get_json, client, path)
    return fields.uris((body or {}).get('Members'))


def _read_adapter(client, node, adapter):
    ndf_uris = _members(client, node, (adapter.json.get(
        'NetworkDeviceFunctions') or {}).get('@odata.id'))
    for controller in adapter.controllers or []:
        ndf_uris.extend(u for u in controller.network_device_function_uris
                        if u not in ndf_uris)
    device_functions = [f for f in (
        bmc.optional(node, f"GET {uri}", _resource,
                     fields.NetworkDeviceFunction, client, uri)
        for uri in ndf_uris) if f is not None]
    functions, device_uris = {}, list(adapter.pcie_device_uris)
    for uri in device_uris:
        device = bmc.optional(node, f"GET {uri}", _pcie_device, client, uri)
        if device is not None:
            for function in _functions_of(client, node, device):
                functions.setdefault(function.path.rstrip('/'), function)
    for ndf in device_functions:
        uri = ndf.pcie_function_uri
        if not uri or uri.rstrip('/') in functions:
            continue
        function = bmc.optional(node, f"GET {uri}", _pcie_function, client,
                                uri)
        if function is not None:
            functions[uri.rstrip('/')] = function
        device_uri = _function_device_uri(uri)
        if device_uri and device_uri not in device_uris:
            device_uris.append(device_uri)
    return NetworkAdapterReading(adapter, device_functions,
                                 list(functions.values()), device_uris)


def get_network_adapters(node):
    """The network adapters of the chassis the node's System links.

    The adapters of each chassis in the System's ``Links.Chassis`` and of
    the chassis those contain (``Links.Contains``: a SmartNIC card is often
    a chassis of its own inside the server's), each with its network device
    functions and PCIe functions (see :data:`NetworkAdapterReading`).
    Whether an adapter is an SR-IOV NIC is for the caller to decide.

    :returns: a list of :data:`NetworkAdapterReading`; empty when the BMC
        lists no network adapters.
    :raises: AcceleratorBMCError, BMCUnavailable.
    """
    def read(client):
        system = bmc.system(client, node)
        queue = [(uri, True) for uri in fields.link_uris(
            (system.json.get('Links') or {}).get('Chassis'))]
        bodies, seen, readings = [], set(), []
        while queue:
            uri, linked = queue.pop(0)
            if uri.rstrip('/') in seen:
                continue
            seen.add(uri.rstrip('/'))
            body = bmc.optional(node, f"GET {uri}", bmc.get_json, client,
                                uri) or {}
            bodies.append(body)
            if linked:
                queue.extend((inner, False) for inner in fields.link_uris(
                    (body.get('Links') or {}).get('Contains')))
        for body in bodies:
            for uri in _members(client, node, (body.get(
                    'NetworkAdapters') or {}).get('@odata.id')):
                adapter = bmc.optional(node, f"GET {uri}", _resource,
                                       fields.NetworkAdapter, client, uri)
                if adapter is not None:
                    readings.append(_read_adapter(client, node, adapter))
        return readings
    return bmc.call(node, None, "GET NetworkAdapters", read)


def get_firmware_inventory(node):
    """Every FirmwareInventory member, freshly read.

    The UpdateService is optional in Redfish (the ServiceRoot requires only
    Links, Id and Name; DMTF's public-cxl mockup has none), and one
    without ``Actions`` is seen too: both give an empty list, as does an
    UpdateService without a FirmwareInventory. The service is read as
    plain JSON here, not through sushy's UpdateService (which requires
    ``Actions``), and the collection is built anew on each call, so a
    version that just changed is seen.

    :returns: a list of sushy SoftwareInventory.
    :raises: AcceleratorBMCError, BMCUnavailable.
    """
    def read(client):
        path = (client.root.json.get('UpdateService') or {}).get(
            '@odata.id')
        if not path:
            LOG.debug("BMC of node %s has no UpdateService: no firmware "
                      "inventory", node.uuid)
            return []
        service = bmc.optional(node, f"GET {path}", bmc.get_json, client, path)
        inventory = ((service or {}).get('FirmwareInventory') or {}).get(
            '@odata.id')
        if not inventory:
            LOG.debug("BMC of node %s has no FirmwareInventory", node.uuid)
            return []
        members = bmc.optional(node, f"GET {inventory}", bmc.get_json, client,
                            inventory)
        found = []
        for uri in fields.uris((members or {}).get('Members')):
            member = bmc.optional(node, f"GET {uri}", _software, client, uri)
            if member is not None:
                found.append(member)
        return found
    return bmc.call(node, None, "GET FirmwareInventory", read)


def _id_tokens(text):
    return [t for t in re.split(r"[^A-Za-z0-9]+", str(text).lower()) if t]


def _index(token, prefixes):
    for prefix in prefixes:
        if token.startswith(prefix) and token[len(prefix):].isdigit():
            return prefix, int(token[len(prefix):])
    return None


#: Id prefixes an accelerator's number follows in FirmwareInventory ids
#: (HPE Cray EX: ``Node0.Acc2.VBIOS`` is GPU2's VBIOS), with the processor
#: types each may name (None: any accelerator).
_ACCEL_TOKENS = {"accelerator": None, "acc": None,
                 "gpu": sys_cons.ProcessorType.GPU,
                 "fpga": sys_cons.ProcessorType.FPGA}


def _by_id_convention(member, processors):
    """The one processor a FirmwareInventory member's Id names, or None.

    ``<system>.<Acc|GPU|FPGA><n>.<what>``: a token naming the processor's
    System (required when more than one System has accelerators, or when
    the Id names a ``node``) and one token ``acc<n>``/``accelerator<n>``
    (any accelerator), ``gpu<n>`` (a GPU) or ``fpga<n>`` (an FPGA) whose
    number is the trailing number of exactly one such processor's Id.
    Anything less certain ties nothing (HPE Cray EX's ``FPGA0`` is a board
    FPGA, and names no node: with no FPGA processor it ties nothing).
    """
    tokens = _id_tokens(member.identity)
    numbered = [_index(t, _ACCEL_TOKENS) for t in tokens]
    numbered = [n for n in numbered if n is not None]
    if len(numbered) != 1:
        return None
    prefix, number = numbered[0]
    wanted_type = _ACCEL_TOKENS[prefix]
    systems = {p.system_identity for p in processors}
    candidates = []
    for proc in processors:
        if wanted_type is not None and proc.processor_type != wanted_type:
            continue
        system = str(proc.system_identity or "").lower()
        if len(systems) > 1 and system not in tokens:
            continue
        if system and system not in tokens and any(
                t.startswith("node") for t in tokens):
            continue
        match = re.search(r"(\d+)$", proc.identity)
        if match and int(match.group(1)) == number:
            candidates.append(proc)
    return candidates[0] if len(candidates) == 1 else None


def firmware_versions_by_processor(inventory, processors=None):
    """Map Processor URI -> (inventory member URI, version).

    A member is tied to a processor by its ``RelatedItem`` links; with
    ``processors`` given, a member without ``RelatedItem`` is also tied by
    the Id convention of :func:`_by_id_convention`, unless a ``RelatedItem``
    already tied that processor. Members tied to nothing are ignored.
    """
    result = {}
    for member in inventory:
        for item in member.related_item or []:
            uri = item.get("@odata.id") if isinstance(item, dict) else None
            if uri:
                result[uri.rstrip("/")] = (member.path, member.version)
    if not processors:
        return result
    named = collections.defaultdict(list)
    for member in inventory:
        if member.related_item:
            continue
        proc = _by_id_convention(member, processors)
        if proc is not None:
            named[proc.path.rstrip("/")].append(member)
    for uri, members in named.items():
        if uri in result:
            continue
        if len(members) == 1:
            result[uri] = (members[0].path, members[0].version)
        else:
            LOG.debug("FirmwareInventory members %s all name %s; none is "
                      "taken", ", ".join(m.path for m in members), uri)
    return result

