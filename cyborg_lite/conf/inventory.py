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
    cfg.IntOpt(
        "full_sync_every",
        default=6, min=1,
        help="Every this many periodic syncs, every document is applied "
             "and every host's agent asked for the attach handles its "
             "document lacks. The passes in between apply only the "
             "documents that changed since they were last applied (their "
             "fingerprint is kept in the database) and write nothing for "
             "the others. 1 applies every document on every pass."),
    cfg.IntOpt(
        "page_size",
        default=500, min=1, max=1000,
        help="Nodes asked of Ironic per request (Ironic caps it at its "
             "[api] max_limit, 1000 by default); a pass keeps one page "
             "of documents in memory at a time."),
]


def register_opts(conf):
    """Register ``[inventory]`` on ``conf``."""
    conf.register_opts(inventory_opts, group="inventory")


def list_opts():
    """(group, options) pairs for oslo-config-generator."""
    return [("inventory", inventory_opts)]
