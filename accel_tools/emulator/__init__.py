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
``ironic-accel-bmc-emulator`` console script (:mod:`.main`), or build the WSGI
app with :func:`accel_tools.emulator.app.create_app`. See README.rst in this
package.

- :mod:`.app`: the WSGI app (the Redfish routes, updates, tasks);
- :mod:`.state`: systems, devices, faults, tasks and sessions;
- :mod:`.devices`: a system's device inventory, validated and defaulted;
- :mod:`.resources` and :mod:`.network`: the Redfish documents it serves;
- :mod:`.images`: the firmware images it understands and fetches;
- :mod:`.faults`: the fault and inspection API (not under ``/redfish``);
- :mod:`.recorded` and :mod:`.record_cli`: recording a real BMC and serving
  the recording;
- :mod:`.exception`: errors that become Redfish error responses.
"""
