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

"""[database] options (oslo.db's own) and the state directory.

``[database]`` is oslo.db's group, as in every OpenStack service, so the
settings deployment tools write (``max_pool_size``, ``max_overflow``,
``pool_timeout``, ``connection_recycle_time``, ``mysql_sql_mode``,
``mysql_wsrep_sync_wait``, ``db_max_retries``...) take effect. cyborg_lite
changes two defaults: ``connection`` (a sqlite file in ``state_path``) and
``db_max_retries`` (5: how often a transaction that lost a deadlock is
retried before the request fails). oslo.db's options for what cyborg_lite
does not do (a read-only ``slave_connection``, asyncio engines,
``use_db_reconnect``) are registered, so a configuration setting them still
loads, but left out of the sample: they would have no effect.
"""

import copy
import os

from oslo_config import cfg
from oslo_db import options as db_options

default_opts = [
    cfg.StrOpt("state_path",
               default=os.path.join(os.path.expanduser("~"), ".cyborg_lite"),
               sample_default="$HOME/.cyborg_lite",
               help="Directory for local state (the default sqlite "
                    "database)."),
]

DEFAULT_CONNECTION = "sqlite:///$state_path/cyborg_lite.sqlite"
#: oslo.db option defaults cyborg_lite changes.
DEFAULTS = {"connection": DEFAULT_CONNECTION, "db_max_retries": 5}
#: oslo.db options cyborg_lite registers but does not act on.
UNUSED = {"backend", "slave_connection", "asyncio_connection",
          "asyncio_slave_connection", "synchronous_reader",
          "use_db_reconnect", "db_retry_interval"}


def register_opts(conf):
    """Register the state directory and oslo.db's ``[database]`` options
    on ``conf``, with cyborg_lite's defaults."""
    conf.register_opts(default_opts)
    db_options.set_defaults(conf, connection=DEFAULT_CONNECTION)
    conf.set_default("db_max_retries", DEFAULTS["db_max_retries"],
                     group="database")


def _database_opts():
    # NOTE(cyborg_lite): copies, so that the sample shows cyborg_lite's
    # defaults without changing the options oslo.db registers.
    opts = [copy.deepcopy(opt) for opt in db_options.database_opts
            if opt.dest not in UNUSED]
    for opt in opts:
        if opt.dest in DEFAULTS:
            opt.default = DEFAULTS[opt.dest]
    return opts


def list_opts():
    """(group, options) pairs for oslo-config-generator."""
    return [("DEFAULT", default_opts), ("database", _database_opts())]
