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

"""``cyborg-lite-manage pools ...`` and ``cyborg-lite-manage programming
...``: function pools, the reconciler run once, and an operator's program or
reset of one region (e.g. a region left in ``error``)."""

import json
import sys

from cyborg_lite import exception
from cyborg_lite import notifier as notifier_mod
from cyborg_lite.db import engine as db_engine
from cyborg_lite.programming import pools
from cyborg_lite.programming import programmer as programmer_mod
from cyborg_lite.programming import reconciler


def _programmer(conf):
    db = db_engine.Database.from_conf(conf)
    return programmer_mod.Programmer(
        conf, db, notifier=notifier_mod.NovaNotifier(conf, db))


def _finish(programmer):
    programmer.stop()
    if programmer.notifier is not None:
        programmer.notifier.shutdown(wait=True)
    programmer.db.dispose()


def pools_status(conf, args, out=None):
    """Print desired vs ready per pool."""
    out = out or sys.stdout
    db = db_engine.Database.from_conf(conf)
    try:
        rows = pools.status(db, conf)
    except pools.InvalidPolicy as error:
        print(error.message, file=sys.stderr)
        return 2
    finally:
        db.dispose()
    if args.json:
        print(json.dumps(rows, indent=2), file=out)
        return 0
    if not rows:
        print("No function pools ([pools] policies is empty and none were "
              "set with 'pools set').", file=out)
        return 0
    header = ("pool", "function", "class", "desired", "ready", "programming",
              "in use", "missing")
    table = [header] + [
        (r["name"], r["function_id"], r["resource_class"] or "any",
         str(r["desired"]), str(r["ready"]), str(r["programming"]),
         str(r["in_use"]), str(r["missing"])) for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)),
              file=out)
    return 0


def pools_set(conf, args):
    """Create or change a pool kept in the database."""
    db = db_engine.Database.from_conf(conf)
    try:
        pool = pools.set_pool(db, args.name, args.function, args.min,
                               args.resource_class)
    except pools.InvalidPolicy as error:
        print(error.message, file=sys.stderr)
        return 2
    finally:
        db.dispose()
    print(f"Pool {pool.name}: keep {pool.min_ready} idle region(s) with "
          f"{pool.function_id}.")
    return 0


def pools_delete(conf, args):
    """Delete a pool kept in the database."""
    db = db_engine.Database.from_conf(conf)
    try:
        found = pools.delete_pool(db, args.name)
    finally:
        db.dispose()
    if not found:
        print(f"No pool named {args.name}.", file=sys.stderr)
        return 1
    return 0


def reconcile_once(conf, args):
    """Run the reconciler once and wait for what it started."""
    programmer = _programmer(conf)
    try:
        summary = reconciler.reconcile(programmer, pools=not args.no_pools,
                                       wait=True)
    except pools.InvalidPolicy as error:
        print(error.message, file=sys.stderr)
        return 2
    finally:
        _finish(programmer)
    print(json.dumps(summary, indent=2))
    return 0


def pools_fill(conf, args):
    """Program idle regions for the pools now and wait."""
    programmer = _programmer(conf)
    try:
        started = pools.fill(programmer, wait=True)
    except pools.InvalidPolicy as error:
        print(error.message, file=sys.stderr)
        return 2
    finally:
        _finish(programmer)
    print(json.dumps(started, indent=2))
    return 0


def program_region(conf, args):
    """Program or reset one region (``reset`` clears a region in error)."""
    programmer = _programmer(conf)
    try:
        outcome = programmer.program(
            args.deployable, function_id=getattr(args, "function", None),
            bitstream_id=getattr(args, "bitstream", None),
            reset=args.action == "reset")
    except exception.CyborgLiteException as error:
        print(error.message, file=sys.stderr)
        return 1
    finally:
        _finish(programmer)
    if not outcome.ok:
        print(outcome.error, file=sys.stderr)
        return 1
    print(f"Region {args.deployable} runs "
          f"{outcome.function_id or 'no function'}.")
    return 0


def add_commands(subparsers):
    """Add the ``pools`` and ``programming`` command groups."""
    parser = subparsers.add_parser("pools", help="function pools")
    sub = parser.add_subparsers(dest="action", required=True)
    cmd = sub.add_parser("status", help="desired vs ready per pool")
    cmd.add_argument("--json", action="store_true")
    cmd.set_defaults(func=pools_status)
    cmd = sub.add_parser("set", help="create or change a pool")
    cmd.add_argument("name")
    cmd.add_argument("--function", required=True,
                     help="the function id (accel:function_id)")
    cmd.add_argument("--min", type=int, required=True,
                     help="idle regions to keep programmed")
    cmd.add_argument("--resource-class",
                     help="only regions of this resource class")
    cmd.set_defaults(func=pools_set)
    cmd = sub.add_parser("delete", help="delete a pool")
    cmd.add_argument("name")
    cmd.set_defaults(func=pools_delete)
    sub.add_parser("fill", help="program idle regions for the pools now "
                                "and wait").set_defaults(func=pools_fill)

    parser = subparsers.add_parser(
        "programming", help="region programming and its reconciler")
    sub = parser.add_subparsers(dest="action", required=True)
    cmd = sub.add_parser("reconcile", help="settle stuck programming runs "
                                           "and ARQs, recheck regions in "
                                           "error, fill pools; once")
    cmd.add_argument("--no-pools", action="store_true",
                     help="do not fill function pools")
    cmd.set_defaults(func=reconcile_once)
    cmd = sub.add_parser("reset", help="clear a region (e.g. in error) "
                                       "through its agent")
    cmd.add_argument("deployable", help="the deployable (region) uuid")
    cmd.set_defaults(func=program_region)
    cmd = sub.add_parser("program", help="program a region now")
    cmd.add_argument("deployable", help="the deployable (region) uuid")
    what = cmd.add_mutually_exclusive_group(required=True)
    what.add_argument("--function", help="accel:function_id to load")
    what.add_argument("--bitstream", help="image id (accel:bitstream_id)")
    cmd.set_defaults(func=program_region)
