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

"""[database] options and the state directory."""

import os

from oslo_config import cfg

default_opts = [
    cfg.StrOpt("state_path",
               default=os.path.join(os.path.expanduser("~"), ".cyborg_lite"),
               sample_default="$HOME/.cyborg_lite",
               help="Directory for local state (the default sqlite "
                    "database)."),
]

database_opts = [
    cfg.StrOpt("connection", secret=True,
               default="sqlite:///$state_path/cyborg_lite.sqlite",
               help="SQLAlchemy URL of the database. sqlite for a single "
                    "host; mysql+pymysql://... or postgresql+psycopg2://... "
                    "when several API workers or hosts share it."),
    cfg.BoolOpt("connection_debug", default=False,
                help="Log every SQL statement (development only)."),
    cfg.IntOpt("max_retries_on_deadlock", default=5, min=0,
               help="How often a transaction that lost a deadlock or a "
                    "serialization race is retried before the request "
                    "fails."),
]


def register_opts(conf):
    """Register the database options on ``conf``."""
    conf.register_opts(default_opts)
    conf.register_opts(database_opts, group="database")


def list_opts():
    """(group, options) pairs for oslo-config-generator."""
    return [("DEFAULT", default_opts), ("database", database_opts)]
