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

"""What the two halves agree on, importable by both without each other.

- :mod:`.inventory`: the inventory document (schema, validation, provider
  uuids, trait naming, device health) that ironic_accel writes into
  ``node.extra`` and cyborg_lite reads;
- :mod:`.node_documents`: reading those documents from Ironic's API;
- :mod:`.placement`: the Placement client and the provider tree a document
  asks for;
- :mod:`.clients`: openstacksdk connections from keystoneauth option groups;
- :mod:`.exception`: the errors of the shared contract.

Nothing here imports Ironic, Flask, ``ironic_accel`` or ``cyborg_lite``.
"""
