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

"""``cyborg-lite-manage``: administrative commands.

One module per command group: ``db``, ``inventory``, ``pools`` and
``programming``, ``notifications``, ``cyborg`` (import a Cyborg
database), and ``placement`` (whose
``migrate-flat`` moved to ``ironic-accel-manage``). Each module's
``add_commands(subparsers)`` adds its parsers, each of which sets
``func=callable(conf, args) -> exit code`` through ``set_defaults``.
"""

import sys

from oslo_config import cfg

from cyborg_lite import service
from cyborg_lite.cmd.manage import cyborg
from cyborg_lite.cmd.manage import db
from cyborg_lite.cmd.manage import inventory
from cyborg_lite.cmd.manage import notifications
from cyborg_lite.cmd.manage import placement
from cyborg_lite.cmd.manage import programming

#: the command group modules, in the order ``--help`` lists them.
GROUPS = (db, inventory, placement, programming, notifications, cyborg)

#: exit code of ``inventory sync`` when another pass kept the lease.
LEASE_BUSY = inventory.LEASE_BUSY


def add_command_parsers(subparsers):
    """Every command group's parsers."""
    for module in GROUPS:
        module.add_commands(subparsers)


def main(argv=None):
    """Run one command; returns (and exits with) its exit code."""
    conf = service.new_conf()
    conf.register_cli_opt(cfg.SubCommandOpt(
        "command", title="Commands", handler=add_command_parsers))
    service.prepare(sys.argv[1:] if argv is None else argv, conf=conf,
                    prog="cyborg-lite-manage",
                    announce=lambda line: print(line, file=sys.stderr))
    code = conf.command.func(conf, conf.command)
    sys.exit(code)
