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

"""ironic_accel options, registered on Ironic's global CONF when the plugin
is loaded: :mod:`.accel_redfish` (``[ironic_accel]``, the steps and their
BMC tasks) and :mod:`.placement` (``[placement]``, the reporter). Each has
register_opts(conf) and list_opts()."""

from ironic_accel.conf import accel_redfish
from ironic_accel.conf import placement

_MODULES = [accel_redfish, placement]


def register_opts(conf):
    for module in _MODULES:
        module.register_opts(conf)


def list_opts():
    """(group, options) pairs for oslo-config-generator."""
    pairs = []
    for module in _MODULES:
        pairs.extend(module.list_opts())
    return pairs
