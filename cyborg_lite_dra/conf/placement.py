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

"""``[placement]`` (optional): where the plugin reads the function a region
runs.

cyborg_lite's v2 API does not show a region's function, but cyborg_lite
keeps it in Placement, as the region provider's
``CUSTOM_FPGA_FUNCTION_ID_<VENDOR>_<FUNCTION>`` trait. With this group set
(keystoneauth options, as Nova's ``[placement]``), the ResourceSlices carry
it as the ``functionTrait`` attribute; unset, they do not.
"""

from accel_common import clients

GROUP = "placement"


def register_opts(conf):
    """Register ``[placement]`` on ``conf``."""
    clients.register_client_opts(conf, GROUP)


def list_opts():
    """(group, options) pairs for oslo-config-generator."""
    return [(GROUP, clients.list_client_opts(GROUP))]
