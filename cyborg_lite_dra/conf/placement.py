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

"""``[placement]`` (optional): the ledger the plugin shares with Nova, and
where it reads what Placement says of a region.

With this group set (keystoneauth options, as Nova's ``[placement]``; a user
that may write allocations), a claim's units are allocated in Placement
before its bind and freed at its unprepare, a device whose units VMs hold
is not offered in the ResourceSlices (:mod:`cyborg_lite_dra.ledger`), and
the slices carry each region's function (its provider's
``CUSTOM_FPGA_FUNCTION_ID_<VENDOR>_<FUNCTION>`` trait, which cyborg_lite's
v2 API does not show) as the ``functionTrait`` attribute. Unset, none of
this happens.
"""

from accel_common import clients

GROUP = "placement"


def register_opts(conf):
    """Register ``[placement]`` on ``conf``."""
    clients.register_client_opts(conf, GROUP)


def list_opts():
    """(group, options) pairs for oslo-config-generator."""
    return [(GROUP, clients.list_client_opts(GROUP))]
