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

"""The real components of the project's story, started as local processes.

Used by the end-to-end demo (``cyborg-lite-demo``), the functional test
fixtures (``tests/fixtures/``) and the benchmarks. Each launcher picks free
ports at run time, keeps its files (configuration, database, log) in a work
directory it is given, waits until its service answers, stops it, and gives
the tail of its log for failure reports. Nothing here imports pytest.

- :mod:`.bmc`: the project's Redfish BMC emulator (a subprocess);
- :mod:`.images`: firmware images for it and an HTTP server for them;
- :mod:`.placement`: a real openstack-placement (a subprocess, sqlite,
  ``noauth2``);
- :mod:`.ironic`: a real Ironic all-in-one (sqlite, ``rpc_transport =
  none``, ``noauth``, ``accel-redfish`` with fake boot/deploy), optionally
  reporting to a Placement;
- :mod:`.stack`: the Ironic half (BMC, Placement, Ironic) started together;
- :mod:`.common`: ports, environment and log tails, shared by the launchers.
"""
