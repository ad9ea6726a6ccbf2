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

from importlib import metadata

from ironic.conf import CONF
from ironic.drivers.modules import fake
from ironic.drivers.modules.redfish import firmware as redfish_firmware
from ironic.drivers.modules.redfish import power as redfish_power

from ironic_accel import conf as accel_conf
from ironic_accel import firmware
from ironic_accel import hardware_type


def test_entry_points_name_the_plugin_classes():
    found = {(group, ep.name): ep.load()
             for group in ("ironic.hardware.types",
                           "ironic.hardware.interfaces.firmware")
             for ep in metadata.entry_points(group=group)
             if ep.name == "accel-redfish"}
    assert found == {
        ("ironic.hardware.types", "accel-redfish"):
            hardware_type.AccelRedfishHardware,
        ("ironic.hardware.interfaces.firmware", "accel-redfish"):
            firmware.AccelRedfishFirmware,
    }


def test_hardware_type_adds_fake_boot_deploy_and_accel_firmware():
    hw = hardware_type.AccelRedfishHardware()
    assert fake.FakeBoot in hw.supported_boot_interfaces
    assert fake.FakeDeploy in hw.supported_deploy_interfaces
    assert hw.supported_firmware_interfaces[0] is firmware.AccelRedfishFirmware
    assert redfish_firmware.RedfishFirmware in hw.supported_firmware_interfaces
    assert hw.supported_power_interfaces == [redfish_power.RedfishPower]


def test_firmware_interface_keeps_redfish_update_step():
    assert issubclass(firmware.AccelRedfishFirmware,
                      redfish_firmware.RedfishFirmware)
    assert firmware.AccelRedfishFirmware.update._is_clean_step


def test_importing_the_plugin_registers_its_options_on_ironic_conf():
    # get_verify_ca() reads CONF[<hardware type>].verify_ca.
    assert CONF["accel-redfish"].verify_ca is None
    assert CONF.ironic_accel.task_poll_interval == 2.0
    assert CONF.ironic_accel.compute_host_source == "name"
    groups = {str(group) for group, _opts in accel_conf.list_opts()}
    assert {"accel-redfish", "ironic_accel"} <= groups
