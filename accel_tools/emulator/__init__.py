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


"""A Redfish BMC emulator with accelerators, for tests and the demo.

sushy-tools has no accelerator Processors, PCIe devices, firmware inventory or
real task monitor, so the project ships this small emulator. Run it with the
``ironic-accel-bmc-emulator`` console script, or build the WSGI app with
:func:`accel_tools.emulator.app.create_app`. See README.rst in this package.
"""
