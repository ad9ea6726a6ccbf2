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

"""ironic_accel: the Ironic plugin that looks after a node's accelerators
over Redfish, out of band.

It adds the ``accel-redfish`` hardware type and firmware interface to
Ironic, writes each node's inventory document into ``node.extra`` and
reports it to Placement.

- :mod:`.hardware_type`: the ``accel-redfish`` hardware type;
- :mod:`.firmware`: the firmware interface, its accelerator steps and the
  conductor periodics that follow a running update;
- :mod:`.update_items`: one device's update, whether it is needed and
  whether it happened;
- :mod:`.step_settings`: the steps' ``settings`` (schema, images, devices);
- :mod:`.image_staging`: the checked copy of an image, and where the BMC
  fetches it;
- :mod:`.discovery`: the inventory refresh (Redfish to inventory document,
  node traits and firmware components);
- :mod:`.redfish`: the gateway to the BMC (sushy and what it lacks);
- :mod:`.placement`: reporting the document's providers to Placement;
- :mod:`.conf`, :mod:`.cmd` (``ironic-accel-manage``) and
  :mod:`.exception`.
"""
