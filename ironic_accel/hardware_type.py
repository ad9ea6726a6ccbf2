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

"""The ``accel-redfish`` hardware type.

Loaded by Ironic from the ``ironic.hardware.types`` entry point with
``enabled_hardware_types = accel-redfish``. Importing it registers the
plugin's options on Ironic's CONF.
"""

from ironic.conf import CONF
from ironic.drivers import redfish
from ironic.drivers.modules import fake

from ironic_accel import conf as accel_conf
from ironic_accel import firmware

accel_conf.register_opts(CONF)


class AccelRedfishHardware(redfish.RedfishHardware):
    """Redfish hardware with accelerator firmware steps."""

    @property
    def supported_boot_interfaces(self):
        """Redfish's boot interfaces plus ``fake``.

        NOTE(ironic-accel): ``fake`` lets tests and demos deploy without
        images; production configurations simply do not enable it.
        """
        return super().supported_boot_interfaces + [fake.FakeBoot]

    @property
    def supported_deploy_interfaces(self):
        """Generic deploy interfaces plus ``fake`` (see boot)."""
        return super().supported_deploy_interfaces + [fake.FakeDeploy]

    @property
    def supported_firmware_interfaces(self):
        """accel-redfish first, then Redfish's own."""
        return ([firmware.AccelRedfishFirmware]
                + super().supported_firmware_interfaces)
