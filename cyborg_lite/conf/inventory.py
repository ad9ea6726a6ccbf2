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


"""``[inventory]``: the periodic inventory sync of the API process."""

from oslo_config import cfg

inventory_opts = [
    cfg.IntOpt(
        "sync_interval",
        default=300, min=0,
        help="Seconds between inventory syncs in the API process: the "
             "devices of the Ironic nodes' inventory documents are applied "
             "to the database, as 'cyborg-lite-manage inventory sync' "
             "does. It only runs when [ironic] is configured; one API "
             "worker at a time runs it (a lease in the database). 0 "
             "disables it."),
]


def register_opts(conf):
    """Register ``[inventory]`` on ``conf``."""
    conf.register_opts(inventory_opts, group="inventory")


def list_opts():
    """(group, options) pairs for oslo-config-generator."""
    return [("inventory", inventory_opts)]
