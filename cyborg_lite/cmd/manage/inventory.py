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

"""``cyborg-lite-manage inventory ...``: apply inventory documents.

``inventory import [--host HOST] FILE`` applies a document read from a
file (and, with ``[placement]`` configured, offers the handles it lists as
the capacity of their region providers); ``inventory sync [--host HOST]
[--wait SECONDS]`` reads the Ironic nodes' documents (``[ironic]``) and
applies them, holding the lease the API workers' periodic pass takes, so
passes never overlap.
"""

import argparse
import json
import math
import os
import socket
import sys

from keystoneauth1 import exceptions as ks_exceptions
from openstack import exceptions as openstack_exceptions

from accel_common import clients
from accel_common import exception as common_exception
from accel_common import inventory
from accel_common.placement import client as placement_client
from cyborg_lite.db import engine as db_engine
from cyborg_lite.inventory import apply
from cyborg_lite.inventory import capacity
from cyborg_lite.inventory import ironic
from cyborg_lite.inventory import lease as lease_mod
from cyborg_lite.programming import programmer as programmer_mod


def _offer_listed_handles(conf, document, summary):
    """Offer the handles ``document`` lists as Placement capacity (and NIC
    traits, taking off those of physical networks its NIC regions left),
    when ``[placement]`` is configured.

    The reporter writes 1 unit for a region whose Ironic document lists
    no handles; a document imported by hand that lists them must not
    leave Placement offering one VF of four.

    :returns: ``{rp uuid: outcome}`` (:func:`capacity.offer_handles`),
        None without ``[placement]``.
    """
    if not clients.is_configured(conf, "placement"):
        return None
    labels = [inventory.region_label(device, region)
              for device in document["devices"]
              for region in device["regions"]
              if "attach_handles" in region
              and inventory.has_address(device)]
    client = placement_client.Client(clients.connection(conf, "placement"))
    outcomes = capacity.offer_handles(client, document, labels)
    for rp_uuid, outcome in capacity.drop_physnets(client, summary).items():
        if outcome != capacity.UNCHANGED or rp_uuid not in outcomes:
            outcomes[rp_uuid] = outcome
    return outcomes


def inventory_import(conf, args):
    """Apply an inventory document read from a file; 0 done, 1 refused (or
    applied but Placement not told), 2 unreadable."""
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
    db = db_engine.Database.from_conf(conf)
    try:
        summary = apply.apply_document(db, document)
    except common_exception.InvalidInventory as error:
        print(f"Rejected {args.file}: {error}; nothing was changed.",
              file=sys.stderr)
        return 1
    finally:
        db.dispose()
    code = 0
    try:
        outcomes = _offer_listed_handles(conf, document, summary)
    except (ks_exceptions.ClientException,
            openstack_exceptions.SDKException) as error:
        print(f"Applied {args.file}, but Placement did not answer: {error}; "
              f"run the command again to offer its handles.",
              file=sys.stderr)
        outcomes, code = None, 1
    if outcomes is not None:
        summary["capacity"] = outcomes
        if any(str(o).startswith("failed") for o in outcomes.values()):
            code = 1
    print(json.dumps(summary, indent=2))
    return code


def sync_ironic_command(conf, args):
    """``inventory sync``; returns the exit code.

    Prints the result as JSON, and one line per host on stderr saying
    where its attach handles came from. 0 done, 1 a node was skipped, a
    host's agent could not be asked (its known handles are kept; run the
    command again once the agent is back) or Ironic/Placement failed, 2
    bad configuration, :data:`NO_NODES` Ironic listed no node at all
    (0 with ``--allow-no-nodes``; the warning is printed either way).
    """
    if not clients.is_configured(conf, "ironic"):
        print("[ironic] is not configured", file=sys.stderr)
        return 2
    db = db_engine.Database.from_conf(conf)
    programmer = programmer_mod.Programmer(conf, db)
    try:
        result = ironic.sync_from_ironic(conf, db, programmer, host=args.host,
                                         log_no_nodes=False)
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
    for line in ironic.handles_lines(result):
        print(line, file=sys.stderr)
    if not result["nodes"]:
        print(f"Warning: {ironic.NO_NODES}", file=sys.stderr)
        if not getattr(args, "allow_no_nodes", False):
            return NO_NODES
    return 1 if ironic.sync_problems(result) else 0


#: exit code of ``inventory sync`` when another pass kept the lease.
LEASE_BUSY = 3

#: exit code of ``inventory sync`` when Ironic listed no node at all (the
#: credentials may not see them; ``--allow-no-nodes`` makes it 0).
NO_NODES = 4


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

    Holds the periodic sync's lease (:mod:`cyborg_lite.inventory.lease`)
    while it runs, so no API worker's pass overlaps it; waits up to
    ``--wait`` seconds for a pass that holds it, else fails with
    :data:`LEASE_BUSY` having changed nothing.
    """
    if not clients.is_configured(conf, "ironic"):
        return sync_ironic_command(conf, args)
    db = db_engine.Database.from_conf(conf)
    lease = lease_mod.InventorySync(conf, db, programmer=None,
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
            return sync_ironic_command(conf, args)
    finally:
        db.dispose()


def add_commands(subparsers):
    """Add the ``inventory`` command group."""
    parser = subparsers.add_parser("inventory", help="device inventory")
    sub = parser.add_subparsers(dest="action", required=True)
    imp = sub.add_parser("import", help="apply an inventory document file")
    imp.add_argument("--host", help="the host the document describes "
                                    "(overrides the document's 'host')")
    imp.add_argument("file", help="the inventory document (JSON)")
    imp.set_defaults(func=inventory_import)
    syn = sub.add_parser("sync", help="apply the inventory documents of "
                                      "the Ironic nodes ([ironic]) to the "
                                      "database")
    syn.add_argument("--host", help="only this host")
    syn.add_argument("--wait", type=_seconds, default=60, metavar="SECONDS",
                     help="how long to wait for an inventory sync pass "
                          "already running (an API worker's periodic one) "
                          "before giving up with exit code "
                          f"{LEASE_BUSY} (default: 60)")
    syn.add_argument("--allow-no-nodes", action="store_true",
                     help="exit 0, not "
                          f"{NO_NODES}, when Ironic lists no node at all "
                          "(a cloud with no node enrolled yet); the "
                          "warning is printed anyway")
    syn.set_defaults(func=inventory_sync_from_ironic)
