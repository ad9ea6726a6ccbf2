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


def _uris(links):
    return [link['@odata.id'] for link in links or []
            if isinstance(link, dict) and link.get('@odata.id')]


class AcceleratorProcessor(processor.Processor):
    """sushy's Processor plus what accelerators carry."""

    fpga = FpgaField('FPGA')
    """The FPGA object; None on non-FPGA processors."""

    firmware_version = base.Field('FirmwareVersion')
    """The processor's firmware version (Processor v1_7 and later)."""

    pcie_device_uri = base.Field(['Links', 'PCIeDevice', '@odata.id'])
    """The PCIeDevice that holds this processor, if linked."""

    pcie_function_uris = base.Field(['Links', 'PCIeFunctions'],
                                    adapter=_uris, default=[])
    """The PCIeFunctions of this processor, if linked."""

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


def get_accelerator_processors(node):
    """The node's Processors of type FPGA, GPU or Accelerator.

    :returns: a list of :class:`redfish_resources.AcceleratorProcessor`,
        each fully read (its FPGA object and acceleration functions too).
    :raises: AcceleratorBMCError, BMCUnavailable.
    """
    def read(client):
        system = _system(client, node)
        path = system.json.get('Processors', {}).get('@odata.id')
        if not path:
            return []
        collection = AcceleratorProcessorCollection(
            client.connector, path, redfish_version=system.redfish_version,
            registries=system.registries, root=client.root)
        processors = [proc for proc in collection.get_members()
                      if proc.is_accelerator]
        for proc in processors:
            proc.slot_functions  # read the functions while retries apply
        return processors
    return _call(node, None, "GET Processors", read)


def get_pcie_devices(node):
    """The node's PCIe devices as ``(device, [functions])`` pairs.

    A system without PCIe devices gives an empty list.
    """
    def read(client):
        system = _system(client, node)
        links = system.json.get('PCIeDevices')
        if isinstance(links, list):
            # NOTE(ironic-accel): sushy's collection over an embedded list
            # skips a device whose GET fails (a 503, say) with a warning;
            # an inventory silently missing a device is worse than a retry.
            devices = [pcie_device.PCIeDevice(
                client.connector, uri, redfish_version=system.redfish_version,
                registries=system.registries, root=client.root)
                for uri in _uris(links)]
        else:
            try:
                devices = system.pcie_devices.get_members()
            except sushy.exceptions.MissingAttributeError:
                return []
        found = []
        for device in devices:
            try:
                functions = device.pcie_functions.get_members()
            except sushy.exceptions.MissingAttributeError:
                functions = []
            found.append((device, functions))
        return found
    return _call(node, None, "GET PCIeDevices", read)


def get_firmware_inventory(node):
    """Every FirmwareInventory member, freshly read.

    sushy caches the collection and its members on the UpdateService object;
    the refresh with ``force=True`` makes sure a version that just changed is
    seen.

    :returns: a list of sushy SoftwareInventory; empty when the BMC has no
        FirmwareInventory.
    """
    def read(client):
        service = client.update_service()
        # NOTE(ironic-accel): a forced refresh cascades: the collection and
        # each member it caches are read again.
        service.refresh(force=True)
        try:
            return service.firmware_inventory.get_members()
        except sushy.exceptions.MissingAttributeError:
            return []
    return _call(node, None, "GET FirmwareInventory", read)


def firmware_versions_by_processor(inventory):
    """Map Processor URI -> (inventory member URI, version)."""
    result = {}
    for member in inventory:
        for item in member.related_item or []:
            uri = item.get("@odata.id") if isinstance(item, dict) else None
            if uri:
                result[uri.rstrip("/")] = (member.path, member.version)
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
    :param target: the Processor or FirmwareInventory member URI.
    :returns: the task monitor URI.
    """
    protocol = transfer_protocol(image_url)

    def post(client):
        monitor = client.update_service().simple_update(
            image_url, targets=[target], transfer_protocol=protocol)
        return monitor.task_monitor_uri
    return _call(node, device, "POST SimpleUpdate", post, idempotent=False)


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
