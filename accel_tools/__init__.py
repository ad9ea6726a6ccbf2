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

"""Tools beside the product, for demos, tests and benchmarks.

- :mod:`.emulator`: the Redfish accelerator BMC emulator
  (``ironic-accel-bmc-emulator``);
- :mod:`.embedded`: launchers of real Placement, Ironic and the emulator on
  loopback with sqlite, for the demo and the functional tests;
- :mod:`.demo`: ``cyborg-lite-demo`` (``tools/demo``);
- :mod:`.devserver`: cyborg_lite's API served from a thread;
- :mod:`.standalone`: the settings of a standalone cyborg_lite (one host,
  no Keystone, no broker, simulated devices);
- :mod:`.kube_standin`: a stand-in for kube-apiserver's ResourceSlices and
  ResourceClaims, for the DRA plugin's demo and tests;
- :mod:`.request_groups`: a device profile as the Placement query Nova
  builds from it.

The product packages never import this one.
"""
