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

"""``cyborg-lite-manage placement ...`` commands.

``placement migrate-flat --host HOST [--inventory FILE] [--apply]``: the
nested devices come from the inventory document in FILE, or else from the
Ironic node whose document names HOST (``[ironic]``); Placement is reached
through ``[placement]``.
``inventory sync [--host HOST]`` (wired in cyborg_lite.cmd.manage): apply
the Ironic nodes' documents to the database (what the inventory periodic does),
with the attach handles the host agents discover where a document has none.
"""

import json
import sys

from keystoneauth1 import exceptions as ks_exceptions
from openstack import exceptions as openstack_exceptions

from ironic_accel import clients
from ironic_accel import inventory
from ironic_accel.placement import client as placement_client
from ironic_accel.placement import reporter

from cyborg_lite import handle_discovery
from cyborg_lite.placement import ironic_source
from cyborg_lite.placement import migrate_flat


def _document(conf, args):
    if args.inventory:
        with open(args.inventory, encoding="utf-8") as handle:
            return dict(json.load(handle), host=args.host)
    if not clients.is_configured(conf, "ironic"):
        raise ValueError("give --inventory FILE, or configure [ironic] to "
                         "read the host's document from its Ironic node")
    selection = ironic_source.documents_from_ironic(
        clients.connection(conf, "ironic"), host=args.host)
    if not selection.documents:
        reasons = "; ".join(f"{n}: {r}" for n, r in selection.skipped.items())
        raise ValueError(f"no usable inventory document for host "
                         f"{args.host} in Ironic{': ' + reasons if reasons else ''}")
    return selection.documents[0]


def migrate_flat_command(conf, args, out=None):
    """``placement migrate-flat``; returns the exit code.

    0 done (or nothing to do), 1 refused or failed, 2 bad usage.
    """
    out = out or sys.stdout
    if not clients.is_configured(conf, "placement"):
        print("[placement] is not configured: nothing to migrate",
              file=sys.stderr)
        return 2
    try:
        document = _document(conf, args)
    except (OSError, ValueError) as exc:
        print(f"Cannot get the inventory of {args.host}: {exc}",
              file=sys.stderr)
        return 2
    try:
        rc_map = dict(item.split("=", 1)
                      for item in (getattr(args, "map_resource_class", None)
                                   or []))
    except ValueError:
        print("--map-resource-class takes FLAT_CLASS=NESTED_CLASS",
              file=sys.stderr)
        return 2
    client = placement_client.Client(clients.connection(conf, "placement"))
    try:
        _plan, lines = migrate_flat.migrate(client, document,
                                            do_apply=args.apply,
                                            rc_map=rc_map)
    except (migrate_flat.MigrationRefused, reporter.ParentNotFound,
            inventory.InvalidInventory) as exc:
        print(f"Refused: {exc}", file=sys.stderr)
        return 1
    except placement_client.PlacementError as exc:
        print(f"Placement refused a step: {exc}. Run the command again: "
              "completed steps are skipped.", file=sys.stderr)
        return 1
    for line in lines:
        print(line, file=out)
    return 0


def _handles_line(host, report):
    if report["source"] == handle_discovery.DOCUMENT:
        return f"{host}: attach handles from the inventory document"
    if report["source"] == handle_discovery.AGENT:
        line = (f"{host}: attach handles from the agent for "
                f"{len(report['filled'])} region(s)")
        if report["kept"]:
            line += (f"; known handles kept for {len(report['kept'])} "
                     f"region(s) the agent reported none for")
    else:
        line = (f"{host}: known attach handles kept for "
                f"{len(report['kept'])} region(s)")
        line += (f": {report['error']}" if report["error"]
                 else ": the agent reported none")
    if report["unmatched"]:
        line += ("; ignored devices the document does not list: "
                 + ", ".join(report["unmatched"]))
    return line


def sync_from_ironic(conf, db, programmer, host=None):
    """Apply the Ironic nodes' documents to ``db`` (all hosts, or ``host``).

    What ``inventory sync`` and the API's periodic sync both run: attach
    handles a document lacks come from the agent serving the host (through
    ``programmer``), and Placement (``[placement]``, when configured) is
    offered the capacity.

    :returns: :func:`cyborg_lite.placement.ironic_source.sync`'s result.
    :raises ValueError: ``[ironic]`` is not configured.
    """
    if not clients.is_configured(conf, "ironic"):
        raise ValueError("[ironic] is not configured")
    placement = None
    if clients.is_configured(conf, "placement"):
        placement = placement_client.Client(
            clients.connection(conf, "placement"))
    # NOTE(accel): the programmer knows which agent serves a host (the
    # embedded one with the in-process transport, else the host's own).
    return ironic_source.sync(db, clients.connection(conf, "ironic"),
                              host=host, placement=placement,
                              agent_api=programmer.agent_api(),
                              agent_host=programmer.agent_host,
                              offer_capacity=True)


def sync_problems(result):
    """True when a node was skipped or a host's agent could not be asked."""
    return bool(result["skipped"]
                or any(r["error"] for r in result["handles"].values()))


def handles_lines(result):
    """One line per host saying where its attach handles came from."""
    return [_handles_line(host, report)
            for host, report in sorted(result["handles"].items())]


def sync_ironic_command(conf, args):
    """``inventory sync``; returns the exit code.

    Prints the result as JSON, and one line per host on stderr saying
    where its attach handles came from. 0 done, 1 a node was skipped, a
    host's agent could not be asked (its known handles are kept; run the
    command again once the agent is back) or Ironic/Placement failed, 2
    bad configuration.
    """
    from cyborg_lite.db import api as db_api
    from cyborg_lite.programming import programmer as programmer_mod
    if not clients.is_configured(conf, "ironic"):
        print("[ironic] is not configured", file=sys.stderr)
        return 2
    db = db_api.Database.from_conf(conf)
    programmer = programmer_mod.Programmer(conf, db)
    try:
        result = sync_from_ironic(conf, db, programmer, host=args.host)
    except (ks_exceptions.ClientException,
            openstack_exceptions.SDKException) as error:
        # NOTE(cyborg_lite): each document is applied in its own
        # transaction, so what was applied before the failure stays; a
        # rerun finishes the job.
        print(f"Inventory sync failed: Ironic or Placement did not answer "
              f"as expected: {error}. Documents applied before it are "
              f"kept; run the command again.", file=sys.stderr)
        return 1
    finally:
        programmer.stop()
        db.dispose()
    print(json.dumps(result, indent=2))
    for line in handles_lines(result):
        print(line, file=sys.stderr)
    return 1 if sync_problems(result) else 0


def add_commands(subparsers):
    """Add the ``placement`` command group to cyborg-lite-manage."""
    parser = subparsers.add_parser("placement", help="Placement providers")
    sub = parser.add_subparsers(dest="action", required=True)
    mig = sub.add_parser(
        "migrate-flat",
        help="move a host's accelerators from the compute-node provider "
             "(legacy flat model) to nested providers; dry run unless "
             "--apply")
    mig.add_argument("--host", required=True,
                     help="the compute host (its compute-node provider name)")
    mig.add_argument("--inventory", metavar="FILE",
                     help="the host's inventory document; read from Ironic "
                          "when omitted")
    mig.add_argument("--map-resource-class", action="append",
                     metavar="FLAT=NESTED",
                     help="the flat inventory used another resource class "
                          "name than the document, e.g. "
                          "CUSTOM_ACCELERATOR_FPGA=FPGA (repeatable)")
    mig.add_argument("--apply", action="store_true",
                     help="carry out the migration (default: only print "
                          "what would change)")
    mig.set_defaults(func=migrate_flat_command)
