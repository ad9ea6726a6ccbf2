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

"""The plugin's gateway to a node's BMC, split as Ironic's
``drivers/modules/redfish/``:

* :mod:`.client`: the sushy client, its session cache, retries and the
  translation of sushy errors (every BMC request goes through
  :func:`.client.call`);
* :mod:`.fields`: what sushy does not declare (the Processor ``FPGA``
  object, AccelerationFunction, a NetworkAdapter's SR-IOV capabilities,
  ...), as sushy ``Field`` declarations;
* :mod:`.inventory`: processors, PCIe devices, network adapters and the
  firmware inventory;
* :mod:`.update`: the update methods and what a BMC offers of them;
* :mod:`.tasks`: polling and cancelling the BMC's task;
* :mod:`.private_api`: the one use of sushy's private names (a raw-body
  POST), kept in one place.

doc/source/architecture.rst ("Packages and who may import whom") lists the
sushy gaps each module covers; doc/source/reference/hardware-redfish.rst
the BMC shapes they are tested against.
"""
