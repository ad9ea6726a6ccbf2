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

"""What accelerators carry that sushy does not declare, the sushy way.

The Processor ``FPGA`` object (DMTF Processor v1_4 and later), the
AccelerationFunction resource, ``Processor.FirmwareVersion`` and the
processor's links to its chassis and PCIe device and functions are declared
as sushy ``Field``s (a Processor subclass), each with its docstring, as
sushy declares its own (``sushy/resources/system/processor.py``). So are
the SR-IOV capabilities of a NetworkAdapter's controllers and their links,
and a NetworkDeviceFunction's
``VirtualFunctionsEnabled`` and ``Links.PCIeFunction`` (sushy declares
NetworkAdapter v1_3 and NetworkDeviceFunction v1_3 without them).
"""

import enum

from sushy import utils as sushy_utils
from sushy.resources import base
from sushy.resources.system import constants as sys_cons
from sushy.resources.system import processor
from sushy.resources.system.network import adapter
from sushy.resources.system.network import device_function

from ironic_accel.redfish import private_api

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


def uris(links):
    """The ``@odata.id`` of each link of a Redfish link list."""
    return [link['@odata.id'] for link in links or []
            if isinstance(link, dict) and link.get('@odata.id')]


def link_uris(links):
    """:func:`uris` of a link list, or of one link object."""
    # NOTE(ironic-accel): the schema makes some links single objects
    # (Processor.Links.Chassis), and BMCs spell some lists as one object.
    return uris([links] if isinstance(links, dict) else links)


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

    chassis_uris = base.Field(['Links', 'Chassis'], adapter=link_uris,
                              default=[])
    """The chassis the processor is linked to, if any."""

    pcie_device_uri = base.Field(['Links', 'PCIeDevice', '@odata.id'])
    """The PCIeDevice that holds this processor, if linked."""

    pcie_function_uris = base.Field(['Links', 'PCIeFunctions'],
                                    adapter=link_uris, default=[])
    """The PCIeFunctions of this processor, if linked."""

    #: The Id of the System whose Processors collection listed this
    #: processor (set by
    #: :func:`ironic_accel.redfish.inventory.get_accelerator_processors`).
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
                    private_api.connector_of(self),
                    slot.acceleration_function_uri,
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




class SRIOVField(base.CompositeField):
    """``VirtualizationOffload.SRIOV`` of a network controller."""

    sriov_enabled = base.Field('SRIOVEnabled',
                               adapter=sushy_utils.bool_or_none)
    """Whether SR-IOV is enabled for the controller (NetworkAdapter
    v1_12 and later)."""

    vepa_capable = base.Field('SRIOVVEPACapable',
                              adapter=sushy_utils.bool_or_none)
    """Whether the controller supports SR-IOV in VEPA mode."""


class VirtualFunctionField(base.CompositeField):
    """``VirtualizationOffload.VirtualFunction`` of a network controller."""

    device_max_count = base.Field('DeviceMaxCount',
                                  adapter=sushy_utils.int_or_none)
    """The most virtual functions the controller supports."""

    network_port_max_count = base.Field('NetworkPortMaxCount',
                                        adapter=sushy_utils.int_or_none)
    """The most virtual functions per network port."""


class VirtualizationOffloadField(base.CompositeField):
    """A network controller's virtualization offload capabilities."""

    sriov = SRIOVField('SRIOV')
    """The SR-IOV capabilities, if reported."""

    virtual_function = VirtualFunctionField('VirtualFunction')
    """The virtual function capabilities, if reported."""


class ControllerCapabilitiesField(base.CompositeField):
    """``Controllers[].ControllerCapabilities`` of a NetworkAdapter."""

    network_port_count = base.Field('NetworkPortCount',
                                    adapter=sushy_utils.int_or_none)
    """The number of physical ports of the controller."""

    virtualization_offload = VirtualizationOffloadField(
        'VirtualizationOffload')
    """SR-IOV and virtual function capabilities."""


class NetworkControllerListField(adapter.ControllersListField):
    """One network controller (ASIC) of a NetworkAdapter."""

    controller_capabilities = ControllerCapabilitiesField(
        'ControllerCapabilities')
    """What the controller can do."""

    pcie_device_uris = base.Field(['Links', 'PCIeDevices'], adapter=link_uris,
                                  default=[])
    """The PCIe devices of the controller."""

    network_device_function_uris = base.Field(
        ['Links', 'NetworkDeviceFunctions'], adapter=link_uris, default=[])
    """The network device functions of the controller."""


def _positive(value):
    return isinstance(value, int) and not isinstance(value, bool) \
        and value > 0


class NetworkAdapter(adapter.NetworkAdapter):
    """sushy's NetworkAdapter plus its controllers' SR-IOV capabilities and
    links."""

    controllers = NetworkControllerListField('Controllers', default=[])
    """The network controllers (ASICs) of the adapter."""

    @property
    def firmware_version(self):
        """The first controller's ``FirmwarePackageVersion``, or None."""
        for controller in self.controllers or []:
            if controller.firmware_package_version:
                return controller.firmware_package_version
        return None

    @property
    def pcie_device_uris(self):
        """The PCIe devices every controller links, in order, once each."""
        found = []
        for controller in self.controllers or []:
            found.extend(u for u in controller.pcie_device_uris
                         if u not in found)
        return found

    @property
    def sriov_capable(self):
        """True when a controller says it can offer virtual functions.

        ``VirtualFunction.DeviceMaxCount`` above 0, ``SRIOV.SRIOVEnabled``
        or ``SRIOV.SRIOVVEPACapable``; an ``SRIOV`` object alone is not
        enough (a BMC reports ``SRIOVVEPACapable: false`` and no count for
        a NIC without SR-IOV).
        """
        for controller in self.controllers or []:
            capabilities = controller.controller_capabilities
            offload = (capabilities.virtualization_offload
                       if capabilities is not None else None)
            if offload is None:
                continue
            vf = offload.virtual_function
            if vf is not None and _positive(vf.device_max_count):
                return True
            sriov = offload.sriov
            if sriov is not None and (sriov.sriov_enabled
                                      or sriov.vepa_capable):
                return True
        return False


class NetworkDeviceFunction(device_function.NetworkDeviceFunction):
    """sushy's NetworkDeviceFunction plus its SR-IOV state and PCIe link."""

    device_enabled = base.Field('DeviceEnabled',
                                adapter=sushy_utils.bool_or_none)
    """Whether the function is enabled (the OS sees no disabled one)."""

    virtual_functions_enabled = base.Field(
        'VirtualFunctionsEnabled', adapter=sushy_utils.bool_or_none)
    """Whether SR-IOV virtual functions are enabled for this function."""

    pcie_function_uri = base.Field(['Links', 'PCIeFunction', '@odata.id'])
    """The PCIeFunction of this network device function, if linked."""

    @property
    def offers_virtual_functions(self):
        """True when the function has or may enable virtual functions."""
        return bool(self.virtual_functions_enabled) or _positive(
            self.max_virtual_functions)
