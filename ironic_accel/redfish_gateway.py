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

"""The one gateway between the plugin and a node's BMC.

Everything the plugin asks a BMC goes through here: sushy clients are cached
per BMC address and credentials (session reuse), each request is retried a
bounded number of times on connection errors and HTTP 503, and sushy errors
become :class:`AcceleratorBMCError` naming the node and the device. The sushy
gaps of DESIGN §1 are handled here too: the Processor ``FPGA`` object and the
AccelerationFunction resource are declared as sushy fields (a Processor
subclass, the sushy way), the firmware inventory is re-read with
``force=True``, ``TaskMonitor.sleep_for`` may be a string, and a task URI
answers 202 while its task runs.
"""

import collections
import dataclasses
import enum
import hashlib
import json
import re
import threading
import time

from ironic.common import exception
from ironic.common.i18n import _
from ironic.conf import CONF
from ironic.drivers.modules.redfish import utils as redfish_utils
from oslo_log import log as logging
import sushy
from sushy import connector as sushy_connector
from sushy import utils as sushy_utils
from sushy.resources import base
from sushy.resources.system import constants as sys_cons
from sushy.resources.system import pcie_device
from sushy.resources.system import processor
from sushy.resources.updateservice import constants as up_cons
from sushy.resources.updateservice import softwareinventory

from ironic_accel import conf as accel_conf
from ironic_accel import exception as accel_exception

LOG = logging.getLogger(__name__)

accel_conf.register_opts(CONF)

#: Task states in which a BMC task is still working.
RUNNING_TASK_STATES = frozenset({
    sushy.TASK_STATE_NEW, sushy.TASK_STATE_STARTING, sushy.TASK_STATE_RUNNING,
    sushy.TASK_STATE_PENDING, sushy.TASK_STATE_SUSPENDED,
    sushy.TASK_STATE_SERVICE, sushy.TASK_STATE_INTERRUPTED,
})

_MAX_CACHED_CLIENTS = 1000

#: Processor types that are accelerators.
ACCELERATOR_TYPES = frozenset({
    sys_cons.ProcessorType.FPGA, sys_cons.ProcessorType.GPU,
    sys_cons.ProcessorType.ACCELERATOR,
})


class FpgaType(enum.Enum):
    """How an FPGA is attached (Redfish ``Processor.FPGA.FpgaType``)."""

    INTEGRATED = 'Integrated'
    """The FPGA is part of the processor package."""

    DISCRETE = 'Discrete'
    """The FPGA is a separate device, e.g. a PCIe card."""


class AccelerationFunction(base.ResourceBase):
    """A Redfish AccelerationFunction: what runs in an FPGA slot."""

    identity = base.Field('Id', required=True)
    """The function's Redfish id."""

    name = base.Field('Name')
    """The function's name."""

    uuid = base.Field('UUID')
    """The function's UUID, the id Cyborg knows the function by."""

    function_type = base.Field('AccelerationFunctionType')
    """E.g. Encryption, Compression, PacketInspection, OEM."""

    manufacturer = base.Field('Manufacturer')
    """Who made the function."""

    version = base.Field('Version')
    """The function's version."""


class ReconfigurationSlotListField(base.ListField):
    """One reconfiguration slot (region) of an FPGA."""

    slot_id = base.Field('SlotId')
    """The slot id, unique within the FPGA."""

    uuid = base.Field('UUID')
    """The slot's UUID."""

    programmable_from_host = base.Field('ProgrammableFromHost')
    """Whether the host may reprogram the slot."""

    acceleration_function_uri = base.Field(
        ['AccelerationFunction', '@odata.id'])
    """The AccelerationFunction loaded in the slot, if any."""


class FpgaHostInterfaceField(base.CompositeField):
    """The FPGA's interface to the host."""

    interface_type = base.Field('InterfaceType')
    """E.g. PCIe."""


class FpgaField(base.CompositeField):
    """Redfish ``Processor.FPGA`` (DMTF Processor v1_4 and later)."""

    fpga_type = base.MappedField('FpgaType', FpgaType)
    """Integrated or discrete."""

    model = base.Field('Model')
    """The FPGA model."""

    firmware_id = base.Field('FirmwareId')
    """The id of the FPGA's firmware (its static/shell image)."""

    firmware_manufacturer = base.Field('FirmwareManufacturer')
    """Who made that firmware."""

    host_interface = FpgaHostInterfaceField('HostInterface')
    """The interface to the host."""

    reconfiguration_slots = ReconfigurationSlotListField(
        'ReconfigurationSlots', default=[])
    """The slots (regions) that can be reprogrammed."""

    firmware_version = base.Field('FirmwareVersion')
    """The version of the FPGA's firmware (its static/shell image)."""


def _uris(links):
    return [link['@odata.id'] for link in links or []
            if isinstance(link, dict) and link.get('@odata.id')]


def _link_uris(links):
    # NOTE(ironic-accel): the schema makes some links single objects
    # (Processor.Links.Chassis), and BMCs spell some lists as one object.
    return _uris([links] if isinstance(links, dict) else links)


class AcceleratorProcessor(processor.Processor):
    """sushy's Processor plus what accelerators carry."""

    fpga = FpgaField('FPGA')
    """The FPGA object; None on non-FPGA processors."""

    processor_firmware_version = base.Field('FirmwareVersion')
    """``Processor.FirmwareVersion`` (Processor v1_7 and later)."""

    processor_vendor_id = base.Field(['ProcessorId', 'VendorId'])
    """``ProcessorId.VendorId`` as the schema spells it (sushy reads
    ``VendorID``): a PCI vendor id on some accelerators, a CPUID vendor
    string on CPUs."""

    chassis_uris = base.Field(['Links', 'Chassis'], adapter=_link_uris,
                              default=[])
    """The chassis the processor is linked to, if any."""

    pcie_device_uri = base.Field(['Links', 'PCIeDevice', '@odata.id'])
    """The PCIeDevice that holds this processor, if linked."""

    pcie_function_uris = base.Field(['Links', 'PCIeFunctions'],
                                    adapter=_link_uris, default=[])
    """The PCIeFunctions of this processor, if linked."""

    #: The Id of the System whose Processors collection listed this
    #: processor (set by :func:`get_accelerator_processors`).
    system_identity = None

    @property
    def firmware_version(self):
        """The firmware version the processor reports, or None.

        ``Processor.FirmwareVersion`` first, then ``FPGA.FirmwareVersion``
        (the only place DMTF's FPGA mockup puts it).
        """
        if self.processor_firmware_version:
            return self.processor_firmware_version
        return self.fpga.firmware_version if self.fpga else None

    @property
    def is_accelerator(self):
        """True for FPGA, GPU and generic accelerator processors."""
        return self.processor_type in ACCELERATOR_TYPES

    @property
    def uri(self):
        """The processor's Redfish URI."""
        return self.path

    @property
    @sushy_utils.cache_it
    def slot_functions(self):
        """``{slot id: AccelerationFunction or None}`` of an FPGA."""
        functions = {}
        slots = self.fpga.reconfiguration_slots if self.fpga else []
        for index, slot in enumerate(slots or []):
            slot_id = str(slot.slot_id if slot.slot_id is not None
                          else index)
            if slot.acceleration_function_uri:
                functions[slot_id] = AccelerationFunction(
                    self._conn, slot.acceleration_function_uri,
                    redfish_version=self.redfish_version,
                    registries=self.registries, root=self.root)
            else:
                functions[slot_id] = None
        return functions


class AcceleratorProcessorCollection(processor.ProcessorCollection):
    """A ProcessorCollection whose members are AcceleratorProcessors."""

    @property
    def _resource_type(self):
        return AcceleratorProcessor


@dataclasses.dataclass
class TaskStatus:
    """What one poll of a BMC task monitor found."""

    running: bool
    state: str | None = None
    health: str | None = None
    percent: int | None = None
    messages: list = dataclasses.field(default_factory=list)
    retry_after: float = 1.0

    @property
    def succeeded(self):
        """Finished with TaskState Completed and a healthy TaskStatus."""
        return (not self.running and self.state == "Completed"
                and self.health in (None, "OK", "Warning"))


class _Connector(sushy_connector.Connector):
    """A sushy connector that leaves retrying to the gateway.

    NOTE(ironic-accel): sushy retries GETs on any 5xx ten times three seconds
    apart by default and connection errors three times; stacked under a
    conductor periodic that hides a BMC outage for half a minute per request.
    One attempt per call here; :func:`_call` owns the bounded retries.
    """

    def __init__(self, url, **kwargs):
        kwargs["server_side_retries"] = 1
        super().__init__(url, **kwargs)

    def _op(self, method, path='', data=None, headers=None, blocking=False,
            timeout=None, server_side_retries_left=None, **kwargs):
        return super()._op(method, path, data=data, headers=headers,
                           blocking=blocking, timeout=timeout,
                           server_side_retries_left=0, **kwargs)


class _Client:
    """A cached sushy root with its connector."""

    def __init__(self, driver_info):
        auth_class = redfish_utils.SessionCache.AUTH_CLASSES[
            driver_info["auth_type"]]
        auth = auth_class(username=driver_info["username"],
                          password=driver_info["password"])
        self.connector = _Connector(
            driver_info["address"], verify=driver_info["verify_ca"],
            default_request_timeout=CONF.redfish.read_timeout,
            connect_timeout=CONF.redfish.connect_timeout,
            tls_min_version=driver_info.get("tls_min_version"),
            tls_ciphers=driver_info.get("tls_ciphers"))
        kwargs = {"verify": driver_info["verify_ca"], "auth": auth,
                  "connector": self.connector}
        if driver_info.get("root_prefix"):
            kwargs["root_prefix"] = driver_info["root_prefix"]
        self.root = sushy.Sushy(driver_info["address"], **kwargs)
        self._update_service = None

    def update_service(self):
        """The BMC's UpdateService, read once per client."""
        if self._update_service is None:
            self._update_service = self.root.get_update_service()
        return self._update_service


_clients = collections.OrderedDict()
_clients_lock = threading.Lock()


def _client_key(driver_info):
    password = (driver_info.get("password") or "").encode()
    # NOTE(ironic-accel): a fast digest is enough here: the key lives in this
    # process only and just has to change when the password does.
    return (driver_info["address"], driver_info.get("username"),
            str(driver_info.get("verify_ca")), driver_info.get("root_prefix"),
            driver_info["auth_type"], hashlib.sha256(password).hexdigest())


def _get_client(node):
    driver_info = redfish_utils.parse_driver_info(node)
    key = _client_key(driver_info)
    with _clients_lock:
        client = _clients.get(key)
        if client is not None:
            _clients.move_to_end(key)
            return client
    client = _Client(driver_info)
    with _clients_lock:
        _clients[key] = client
        while len(_clients) > _MAX_CACHED_CLIENTS:
            _clients.popitem(last=False)
    return client


def _forget_client(node):
    try:
        key = _client_key(redfish_utils.parse_driver_info(node))
    except exception.IronicException:
        return
    with _clients_lock:
        _clients.pop(key, None)


def clear_cache():
    """Forget every cached sushy client (tests, credential rotation)."""
    with _clients_lock:
        _clients.clear()


def _describe(exc):
    # NOTE(ironic-accel): sushy's messages carry the whole extended info of
    # the Redfish error; the status and first message are what helps.
    if isinstance(exc, sushy.exceptions.HTTPError):
        detail = getattr(exc, "detail", None) or "no detail"
        return f"HTTP {exc.status_code}: {detail}"[:300]
    return str(exc)[:300]


def _is_transient(exc):
    if isinstance(exc, sushy.exceptions.ServerSideError):
        return exc.status_code == 503
    return isinstance(exc, sushy.exceptions.ConnectionError)


def _call(node, device, what, func, idempotent=True):
    """Run ``func(client)`` with bounded retries and error translation.

    :param node: the Ironic node.
    :param device: the device the call is about (for messages), or None.
    :param what: a few words saying what was asked, for messages.
    :param func: called with a :class:`_Client`.
    :param idempotent: False for a request the BMC may have acted on when
        its answer got lost (a POST): only 503, which says the BMC refused
        it, is retried then.
    :raises: BMCUnavailable when every attempt met a connection error or
        503; AcceleratorBMCError for any other BMC error.
    """
    attempts = CONF.ironic_accel.bmc_retries + 1
    device = device or "-"
    for attempt in range(1, attempts + 1):
        try:
            return func(_get_client(node))
        except (sushy.exceptions.ConnectionError,
                sushy.exceptions.ServerSideError) as exc:
            if isinstance(exc, sushy.exceptions.ConnectionError):
                # NOTE(ironic-accel): the session may be what broke.
                _forget_client(node)
            if not _is_transient(exc) or (
                    not idempotent
                    and isinstance(exc, sushy.exceptions.ConnectionError)):
                raise accel_exception.AcceleratorBMCError(
                    node=node.uuid, device=device,
                    reason=f"{what} failed: {_describe(exc)}")
            if attempt == attempts:
                raise accel_exception.BMCUnavailable(
                    node=node.uuid, device=device,
                    reason=f"{what} failed after {attempts} attempts: "
                           f"{_describe(exc)}")
            LOG.warning("BMC of node %(node)s: %(what)s failed (attempt "
                        "%(n)d of %(total)d), retrying: %(exc)s",
                        {"node": node.uuid, "what": what, "n": attempt,
                         "total": attempts, "exc": _describe(exc)})
            time.sleep(CONF.ironic_accel.bmc_retry_interval)
        except sushy.exceptions.AccessError as exc:
            _forget_client(node)
            raise accel_exception.AcceleratorBMCError(
                node=node.uuid, device=device,
                reason=f"{what} refused, check the credentials: "
                       f"{_describe(exc)}")
        except sushy.exceptions.SushyError as exc:
            raise accel_exception.AcceleratorBMCError(
                node=node.uuid, device=device,
                reason=f"{what} failed: {_describe(exc)}")


def _system(client, node):
    # NOTE(ironic-accel): one cached client serves every system of a BMC;
    # the system comes from each node's own driver_info.
    system_id = redfish_utils.parse_driver_info(node)["system_id"]
    return client.root.get_system(system_id)


def get_system(node):
    """The node's sushy System, over the cached session.

    Resources reached from it later (managers, chassis) are read lazily over
    the same session, outside this function's retries.
    """
    return _call(node, None, "GET System", lambda client: _system(client,
                                                                   node))


def _get_json(client, uri):
    return client.connector.get(uri).json()


def _optional(node, what, func, *args):
    """``func(*args)``, or None when the BMC answers a lasting error.

    For resources the inventory can do without (a chassis' PCIe device, a
    linked function): a BMC that answers 404 or 500 for one of them (seen
    on recorded iLO trees) costs that resource, with a warning, not the
    whole inventory. 503 and connection errors still go to :func:`_call`'s
    retries.
    """
    try:
        return func(*args)
    except sushy.exceptions.HTTPError as exc:
        if _is_transient(exc) or isinstance(exc,
                                            sushy.exceptions.AccessError):
            raise
        LOG.warning("BMC of node %(node)s: %(what)s failed, left out: "
                    "%(exc)s", {"node": node.uuid, "what": what,
                                "exc": _describe(exc)})
        return None


def _processors_of(client, system_json, system_id):
    path = (system_json.get('Processors') or {}).get('@odata.id')
    if not path:
        return []
    collection = AcceleratorProcessorCollection(
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
    members = _uris(_get_json(client, collection).get('Members'))
    own = system_json.get('@odata.id', '').rstrip('/')
    others = [uri for uri in members if uri.rstrip('/') != own]
    if not others:
        return []
    hosts, boards = [], []
    for uri in others:
        other = _get_json(client, uri)
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
        system = _system(client, node)
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
    return _call(node, None, "GET Processors", read)


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
        members = _optional(node, f"GET {path}", lambda: _uris(
            _get_json(client, path).get('Members')))
        uris = members or []
    else:
        # NOTE(ironic-accel): PCIeDevice v1_0 to v1_3 list the functions
        # in Links.PCIeFunctions; the collection came with v1_4.
        uris = _link_uris((device.links or {}).get('PCIeFunctions'))
    functions = []
    for uri in uris:
        function = _optional(node, f"GET {uri}", _pcie_function, client, uri)
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
        system = _system(client, node)
        uris = []
        links = system.json.get('PCIeDevices')
        if isinstance(links, list):
            uris.extend(_uris(links))
        elif isinstance(links, dict) and links.get('@odata.id'):
            uris.extend(_uris(_get_json(client, links['@odata.id']).get(
                'Members')))
        chassis = _link_uris((system.json.get('Links') or {}).get('Chassis'))
        for proc in processors:
            chassis.extend(u for u in proc.chassis_uris if u not in chassis)
        for uri in chassis:
            body = _optional(node, f"GET {uri}", _get_json, client, uri)
            path = ((body or {}).get('PCIeDevices') or {}).get('@odata.id')
            if path:
                uris.extend(_uris((_optional(
                    node, f"GET {path}", _get_json, client, path)
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
            device = _optional(node, f"GET {uri}", _pcie_device, client, uri)
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
            function = _optional(node, f"GET {uri}", _pcie_function, client,
                                 uri)
            device_uri = _function_device_uri(uri)
            for device, functions in found:
                if device_uri and device.path.rstrip('/') == device_uri:
                    if function is not None:
                        functions.append(function)
                    break
            known.add(uri.rstrip('/'))
        return found
    return _call(node, None, "GET PCIeDevices", read)


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
        service = _optional(node, f"GET {path}", _get_json, client, path)
        inventory = ((service or {}).get('FirmwareInventory') or {}).get(
            '@odata.id')
        if not inventory:
            LOG.debug("BMC of node %s has no FirmwareInventory", node.uuid)
            return []
        members = _optional(node, f"GET {inventory}", _get_json, client,
                            inventory)
        found = []
        for uri in _uris((members or {}).get('Members')):
            member = _optional(node, f"GET {uri}", _software, client, uri)
            if member is not None:
                found.append(member)
        return found
    return _call(node, None, "GET FirmwareInventory", read)


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


def transfer_protocol(url):
    """The Redfish TransferProtocol (a sushy constant) for an image URL."""
    scheme = url.split(":", 1)[0].lower()
    try:
        return up_cons.UpdateTransferProtocolType(scheme.upper())
    except ValueError:
        raise exception.InvalidParameterValue(
            _("Unsupported image URL scheme %(scheme)r in %(url)s") %
            {"scheme": scheme, "url": url})


def simple_update(node, device, image_url, target):
    """Start ``SimpleUpdate`` of ``image_url`` on ``target``.

    :param device: the device id (for messages).
    :param target: the Processor or FirmwareInventory member URI; None for
        a BMC whose SimpleUpdate takes no Targets.
    :returns: the task monitor URI (from the Task body or, when the BMC
        answers 202 with only a ``Location``, from that header).
    """
    protocol = transfer_protocol(image_url)

    def post(client):
        monitor = client.update_service().simple_update(
            image_url, targets=[target] if target else None,
            transfer_protocol=protocol)
        return monitor.task_monitor_uri
    return _call(node, device, "POST SimpleUpdate", post, idempotent=False)


#: How ``update_accelerator_firmware`` can hand an image to a BMC
#: (DSP0266 "Software update"): ``SimpleUpdate`` (the BMC downloads the
#: image), ``MultipartHttpPushUri`` (Redfish 1.6+: the image and its
#: ``UpdateParameters`` in one multipart/form-data POST) and ``HttpPushUri``
#: (targets set in ``HttpPushUriTargets``, then the image POSTed as is).
SIMPLE_UPDATE = "SimpleUpdate"
MULTIPART_PUSH = "MultipartHttpPushUri"
HTTP_PUSH = "HttpPushUri"
UPDATE_METHODS = (SIMPLE_UPDATE, MULTIPART_PUSH, HTTP_PUSH)


@dataclasses.dataclass
class UpdateOffer:
    """What a BMC's UpdateService offers for updates."""

    simple_update: str = None
    #: False when the SimpleUpdate ActionInfo lists no Targets parameter
    #: (the BMC ignores or refuses Targets); None when it does not say.
    simple_targets: bool = None
    multipart_uri: str = None
    http_push_uri: str = None
    http_push_targets: bool = False

    update_service_uri: str = None

    def methods(self):
        """The methods offered, most precise first: a push that takes
        Targets, SimpleUpdate with Targets, then the rest."""
        found = []
        if self.multipart_uri:
            found.append(MULTIPART_PUSH)
        if self.simple_update and self.simple_targets is not False:
            found.append(SIMPLE_UPDATE)
        if self.http_push_uri and self.http_push_targets:
            found.append(HTTP_PUSH)
        return found


def get_update_offer(node):
    """Read the UpdateService: the update methods and how they take
    targets.

    :raises: AcceleratorBMCError, BMCUnavailable.
    """
    def read(client):
        offer = UpdateOffer()
        path = (client.root.json.get('UpdateService') or {}).get(
            '@odata.id')
        if not path:
            return offer
        service = _get_json(client, path)
        offer.update_service_uri = path
        action = (service.get('Actions') or {}).get(
            '#UpdateService.SimpleUpdate') or {}
        offer.simple_update = action.get('target')
        info_uri = action.get('@Redfish.ActionInfo')
        if offer.simple_update and info_uri:
            info = _optional(node, f"GET {info_uri}", _get_json, client,
                             info_uri)
            if info is not None:
                names = {p.get('Name') for p in info.get('Parameters') or ()}
                offer.simple_targets = 'Targets' in names
        offer.multipart_uri = service.get('MultipartHttpPushUri')
        offer.http_push_uri = service.get('HttpPushUri')
        offer.http_push_targets = 'HttpPushUriTargets' in service
        return offer
    return _call(node, None, "GET UpdateService", read)


def choose_update_method(node, offer, forced=None):
    """The method to update with: ``forced`` when the BMC offers it, else
    the first of :meth:`UpdateOffer.methods`.

    :raises: InvalidParameterValue saying what the BMC offers.
    """
    offered = offer.methods()
    if forced and forced != "auto":
        if forced == SIMPLE_UPDATE and offer.simple_update:
            return forced
        if forced in offered:
            return forced
        raise exception.InvalidParameterValue(
            _("Node %(node)s: update method %(method)s was asked for but "
              "its BMC offers %(offered)s") %
            {"node": node.uuid, "method": forced,
             "offered": ", ".join(offered) or "no update method"})
    if not offered:
        raise exception.InvalidParameterValue(
            _("Node %(node)s: its BMC offers no update method that can aim "
              "at one device (SimpleUpdate %(simple)s, no push URI taking "
              "targets); set update_method=SimpleUpdate if its images name "
              "their device themselves") %
            {"node": node.uuid,
             "simple": "without Targets" if offer.simple_update
             else "absent"})
    return offered[0]


def _monitor_of(response, action_uri):
    """The task monitor a BMC answered an update with: a Location header
    (202 with or without a body), else the Task body's own URI."""
    location = response.headers.get('Location')
    if location:
        return location
    try:
        body = response.json()
    except ValueError:
        body = {}
    monitor = body.get('TaskMonitor') or body.get('@odata.id')
    if not monitor:
        raise accel_exception.AcceleratorBMCError(
            node="-", device="-",
            reason=f"the BMC accepted the update at {action_uri} but gave "
                   f"neither a Location nor a task (status "
                   f"{response.status_code})")
    return monitor


def push_update(node, device, method, offer, image_path, target):
    """Hand the image at ``image_path`` (downloaded and checked by the
    conductor) to the BMC with a push method.

    :returns: the task monitor URI.
    """
    def post(client):
        with open(image_path, 'rb') as image:
            if method == MULTIPART_PUSH:
                parameters = {"Targets": [target],
                              "@Redfish.OperationApplyTime": "Immediate"}
                response = client.connector.post(
                    offer.multipart_uri, headers={'Content-Type': None},
                    files={'UpdateParameters': (
                        None, json.dumps(parameters), 'application/json'),
                        'UpdateFile': ('image.bin', image,
                                       'application/octet-stream')})
                return _monitor_of(response, offer.multipart_uri)
            client.connector.patch(offer.update_service_uri,
                                   data={'HttpPushUriTargets': [target]})
            # NOTE(ironic-accel): the image is the raw request body, which
            # sushy's connector (JSON bodies only) cannot send.
            session = client.connector._session
            response = session.post(
                client.connector._url.rstrip('/') + offer.http_push_uri,
                data=image,
                headers={'Content-Type': 'application/octet-stream',
                         'OData-Version': '4.0'},
                verify=client.connector._verify,
                timeout=CONF.ironic_accel.image_download_timeout)
            if response.status_code >= 400:
                raise sushy.exceptions.HTTPError(
                    method='POST', url=offer.http_push_uri,
                    response=response)
            return _monitor_of(response, offer.http_push_uri)
    return _call(node, device, f"POST {method}", post, idempotent=False)


def _retry_after(monitor):
    # NOTE(ironic-accel): sushy's TaskMonitor.sleep_for gives the header
    # as a string when it holds digits, seconds when it holds a date.
    try:
        return max(0.0, float(monitor.sleep_for))
    except (TypeError, ValueError, OverflowError):
        return 1.0


def poll_task(node, device, monitor_uri):
    """Poll a task monitor once.

    :returns: :class:`TaskStatus`.
    :raises: BMCUnavailable when the BMC does not answer; AcceleratorBMCError
        when the task is gone or the BMC errs.
    """
    def read(client):
        monitor = client.root.get_task_monitor(monitor_uri)
        task = monitor.task
        if task is None and not monitor.is_processing:
            # NOTE(ironic-accel): a finished monitor may answer with the
            # Task body or redirect to it; read it explicitly.
            task = monitor.get_task()
        status = TaskStatus(running=monitor.is_processing,
                            retry_after=_retry_after(monitor))
        if task is None:
            return status
        if task.task_state is not None:
            status.state = task.task_state.value
            # NOTE(ironic-accel): a task URI answers 202 while running, so
            # the state inside counts more than the status code.
            status.running = task.task_state in RUNNING_TASK_STATES
        if task.task_status is not None:
            status.health = task.task_status.value
        status.percent = task.percent_complete
        status.messages = [m.message or m.message_id
                           for m in (task.messages or [])
                           if m.message or m.message_id]
        return status
    return _call(node, device, f"GET task {monitor_uri}", read)


def cancel_task(node, device, monitor_uri):
    """Ask the BMC to cancel a task (DSP0266: DELETE on its monitor).

    :returns: True when the BMC accepted the cancel, False when it refused
        it (many BMCs do not allow cancelling an update).
    :raises: BMCUnavailable when the BMC does not answer.
    """
    def delete(client):
        try:
            client.connector.delete(monitor_uri)
        except sushy.exceptions.HTTPError as exc:
            if exc.status_code in (400, 403, 404, 405, 409, 501):
                LOG.info("Node %(node)s: the BMC refused to cancel task "
                         "%(uri)s: %(exc)s", {"node": node.uuid,
                                             "uri": monitor_uri, "exc": exc})
                return False
            raise
        return True
    return _call(node, device, f"DELETE task {monitor_uri}", delete,
                 idempotent=False)
