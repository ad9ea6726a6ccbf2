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

``db sync``, ``inventory import --host HOST FILE``, ``inventory sync [--host
HOST] [--wait SECONDS]``. Other modules add command groups (e.g.
``placement``, ``pools``) by providing a module named in ``EXTENSIONS``
with ``add_commands(subparsers)``: each parser it adds sets
``func=callable(conf, args) -> exit code`` through ``set_defaults``.
"""

import argparse
import importlib
import json
import math
import os
import socket
import sys

from oslo_config import cfg

from cyborg_lite.db import api as db_api
from cyborg_lite import inventory_sync
from cyborg_lite import periodic_sync
from cyborg_lite import service
from ironic_accel import clients
from ironic_accel import inventory

#: modules that may add command groups; missing ones are skipped.
EXTENSIONS = ["cyborg_lite.placement.manage", "cyborg_lite.pools.manage",
              "cyborg_lite.cmd.notifications"]


def db_sync(conf, args):
    """Create or upgrade the schema."""
    db = db_api.Database.from_conf(conf)
    db.sync()
    print(f"Database schema is at the newest revision "
          f"({db_api.migration.current(db.engine)}).")
    return 0


def inventory_import(conf, args):
    """Apply an inventory document read from a file."""
    try:
        with open(args.file, encoding="utf-8") as handle:
            document = json.load(handle)
    except (OSError, ValueError) as error:
        print(f"Cannot read {args.file}: {error}", file=sys.stderr)
        return 2
    if not isinstance(document, dict):
        print(f"{args.file}: the document must be a JSON object",
              file=sys.stderr)
        return 2
    if args.host:
        document = dict(document, host=args.host)
    db = db_api.Database.from_conf(conf)
    try:
        summary = inventory_sync.apply_document(db, document)
    except inventory.InvalidInventory as error:
        print(f"Rejected {args.file}: {error}; nothing was changed.",
              file=sys.stderr)
        return 1
    print(json.dumps(summary, indent=2))
    return 0


#: exit code of ``inventory sync`` when another pass kept the lease.
LEASE_BUSY = 3


def _seconds(text):
    try:
        value = float(text)
    except ValueError:
        value = -1
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a number of seconds (0 or more)")
    return value


def _lease_owner():
    """Who holds the lease in ``periodic_leases``: this command's pid."""
    owner = (f"cyborg-lite-manage inventory sync pid {os.getpid()} on "
             f"{socket.gethostname()}")
    return owner[:64]


def _holder_text(owner, expires_at):
    return f"{owner} (until {expires_at:%Y-%m-%d %H:%M:%S} UTC)"


def inventory_sync_from_ironic(conf, args):
    """Read the nodes' documents from Ironic and apply them.

    Holds the periodic sync's lease (:mod:`cyborg_lite.periodic_sync`)
    while it runs, so no API worker's pass overlaps it; waits up to
    ``--wait`` seconds for a pass that holds it, else fails with
    :data:`LEASE_BUSY` having changed nothing.
    """
    from cyborg_lite.placement import manage as placement_manage
    if not clients.is_configured(conf, "ironic"):
        return placement_manage.sync_ironic_command(conf, args)
    db = db_api.Database.from_conf(conf)
    lease = periodic_sync.InventorySync(conf, db, programmer=None,
                                        owner=_lease_owner())

    def waiting(owner, expires_at):
        print(f"Waiting up to {args.wait:g} s for the inventory sync lease, "
              f"held by {_holder_text(owner, expires_at)}", file=sys.stderr)

    try:
        if not lease.wait_for(args.wait, waiting=waiting):
            holder = lease.holder()
            held_by = _holder_text(*holder) if holder else "another pass"
            print(f"Gave up after {args.wait:g} s: the inventory sync lease "
                  f"is held by {held_by}. Nothing was changed; run the "
                  f"command again later or with a longer --wait.",
                  file=sys.stderr)
            return LEASE_BUSY
        with lease.holding():
            return placement_manage.sync_ironic_command(conf, args)
    finally:
        db.dispose()


def _add_core_commands(subparsers):
    parser = subparsers.add_parser("db", help="database schema")
    sub = parser.add_subparsers(dest="action", required=True)
    sub.add_parser("sync", help="create or upgrade the schema").set_defaults(
        func=db_sync)

    parser = subparsers.add_parser("inventory", help="device inventory")
    sub = parser.add_subparsers(dest="action", required=True)
    imp = sub.add_parser("import", help="apply an inventory document file")
    imp.add_argument("--host", help="the host the document describes "
                                    "(overrides the document's 'host')")
    imp.add_argument("file", help="the inventory document (JSON)")
    imp.set_defaults(func=inventory_import)
    syn = sub.add_parser("sync", help="apply the inventory documents of the "
                                      "Ironic nodes ([ironic]) to the database")
    syn.add_argument("--host", help="only this host")
    syn.add_argument("--wait", type=_seconds, default=60, metavar="SECONDS",
                     help="how long to wait for an inventory sync pass "
                          "already running (an API worker's periodic one) "
                          "before giving up with exit code "
                          f"{LEASE_BUSY} (default: 60)")
    syn.set_defaults(func=inventory_sync_from_ironic)


def _extensions():
    found = []
    for name in EXTENSIONS:
        try:
            found.append(importlib.import_module(name))
        except ModuleNotFoundError as exc:
            if exc.name != name and not name.startswith(f"{exc.name}."):
                raise
    return found


def add_command_parsers(subparsers):
    """Every command group: the core ones and the extensions'."""
    _add_core_commands(subparsers)
    for module in _extensions():
        module.add_commands(subparsers)


def main(argv=None):
    """Run one command; returns (and exits with) its exit code."""
    conf = service.new_conf()
    conf.register_cli_opt(cfg.SubCommandOpt(
        "command", title="Commands", handler=add_command_parsers))
    service.prepare(sys.argv[1:] if argv is None else argv, conf=conf)
    code = conf.command.func(conf, conf.command)
    sys.exit(code)


if __name__ == "__main__":
    main()
