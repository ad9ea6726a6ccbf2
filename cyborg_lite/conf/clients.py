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

"""Clients of other services: [placement], [ironic], [glance] ([nova] in
:mod:`.nova`).

Each group holds keystoneauth session/auth/adapter options, as Nova and Cyborg
configure theirs. A group with neither ``auth_type`` nor ``endpoint_override``
set means "this service is not part of the deployment" (standalone mode).
"""

from accel_common import clients

#: the client groups registered here.
GROUPS = ("placement", "ironic", "glance")


def register_opts(conf):
    """Register the client groups on ``conf``."""
    for group in GROUPS:
        clients.register_client_opts(conf, group)


def list_opts():
    """(group, options) pairs for oslo-config-generator."""
    return [(group, clients.list_client_opts(group)) for group in GROUPS]
