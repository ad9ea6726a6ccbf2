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

"""Who the demo's requests to cyborg_lite come from.

cyborg_lite runs with ``noauth`` in the demo, so each caller's identity
is the headers keystonemiddleware would set after checking its tokens.
"""

#: Nova's identity when it calls Cyborg: the user's project and roles plus a
#: service token (X-Service-Roles), as keystonemiddleware would pass them.
NOVA_HEADERS = {"X-Project-Id": "demo-project", "X-User-Id": "demo-user",
                "X-Roles": "member,reader", "X-Service-Roles": "service"}
#: An operator with the admin role.
ADMIN_HEADERS = {"X-Project-Id": "admin-project", "X-User-Id": "admin",
                 "X-Roles": "admin"}
