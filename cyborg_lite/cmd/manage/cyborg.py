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

"""``cyborg-lite-manage cyborg import --from URL [--apply]``.

Reads a Cyborg database (only reads) and prints what importing it would
do, per kind, with one line per conflict and how it is settled. Without
``--apply`` nothing changes; with it everything is imported in one
transaction. With ``[placement]`` configured it also says whether the
providers kept hold the allocations of their Bound ARQs, and ``--apply``
then adopts the imported devices an inventory document also lists
(:mod:`cyborg_lite.cyborg_import.adopt`; a rerun finishes an adoption cut
off halfway). Exit codes: 0 the
import can be done (or was done), 1 a conflict stops it, 2 the source
cannot be read or its schema is unknown.
"""

import sys

from accel_common import clients
from accel_common import exception as common_exception
from accel_common.placement import client as placement_client
from cyborg_lite import exception
from cyborg_lite.cyborg_import import adopt
from cyborg_lite.cyborg_import import importer
from cyborg_lite.cyborg_import import placement
from cyborg_lite.cyborg_import import reader
from cyborg_lite.db import engine as db_engine


def cyborg_import(conf, args):
    """Plan (and with ``--apply`` do) the import; returns the exit code."""
    try:
        source = reader.read(args.source)
    except exception.Invalid as error:
        print(f"Cannot import: {error}", file=sys.stderr)
        return 2
    print(f"Cyborg database at schema {source.schema.revision} "
          f"({source.schema.release}).")
    db = db_engine.Database.from_conf(conf)
    try:
        plan = importer.run(db, source, apply=args.apply,
                            free_orphan_handles=args.free_orphan_handles)
    finally:
        db.dispose()
    for line in plan.lines():
        print(line)
    client = None
    if clients.is_configured(conf, "placement"):
        client = placement_client.Client(
            clients.connection(conf, "placement"))
        for line in placement.check(client, plan):
            print("placement: " + line)
    if not plan.can_apply:
        return 1
    if args.apply and not plan.empty:
        print("Imported, in one transaction.")
    elif not args.apply and not plan.empty:
        print("Dry run: nothing was changed; run again with --apply to "
              "import.")
    if args.apply:
        return _adopt(conf, client)
    return 0


def _adopt(conf, client):
    """Adopt the imported devices an inventory also has (see
    :mod:`cyborg_lite.cyborg_import.adopt`); returns the exit code."""
    db = db_engine.Database.from_conf(conf)
    try:
        if client is None:
            waiting, lines = db.read(adopt.pending)
            if waiting:
                lines.append(
                    f"{len(waiting)} imported device(s) are also in an "
                    "inventory document: configure [placement] and run "
                    "again to move them onto the inventory's regions; "
                    "until then their twin handles stay reserved")
        else:
            lines = adopt.adopt(db, client)
    except common_exception.PlacementError as error:
        print(f"adopt: {error}; run again to finish", file=sys.stderr)
        return 1
    finally:
        db.dispose()
    for line in lines:
        print("adopt: " + line)
    return 0


def add_commands(subparsers):
    """Add the ``cyborg`` command group."""
    parser = subparsers.add_parser("cyborg", help="adopt a Cyborg database")
    sub = parser.add_subparsers(dest="action", required=True)
    imp = sub.add_parser(
        "import", help="import a Cyborg database (dry run unless --apply)")
    imp.add_argument("--from", dest="source", required=True,
                     metavar="URL",
                     help="SQLAlchemy URL of Cyborg's database; only read")
    imp.add_argument("--apply", action="store_true",
                     help="import, in one transaction")
    imp.add_argument("--free-orphan-handles", action="store_true",
                     help="import attach handles marked in use by no ARQ "
                     "as free (default: kept in use)")
    imp.set_defaults(func=cyborg_import)
