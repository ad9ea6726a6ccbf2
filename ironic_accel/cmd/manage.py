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

"""``ironic-accel-manage``: administrative commands of the Ironic side.

``placement migrate-flat --host HOST [--inventory FILE] [--apply]``: move
a host off early Cyborg's flat Placement model to the reporter's nested
providers (:mod:`ironic_accel.placement.migrate_flat`). The nested devices
come from the inventory document in FILE, or else from the Ironic node whose
document names HOST (``[ironic]``); Placement is reached through
``[placement]``, the reporter's own settings. Without ``--config-file``
the conductor's ``/etc/ironic/ironic.conf`` is read.
"""

import importlib.util
import json
import sys

# NOTE(manage): the plugin's modules are Ironic's; on a host without Ironic
# say where the command runs instead of ending in an ImportError traceback.
if importlib.util.find_spec("ironic") is None:
    sys.exit("ironic-accel-manage runs on an Ironic conductor host (in the "
             "Python environment Ironic is installed in); the 'ironic' "
             "package is not installed here.")

from oslo_config import cfg  # noqa: E402
from oslo_log import log  # noqa: E402

from accel_common import clients  # noqa: E402
from accel_common import exception as common_exception  # noqa: E402
from accel_common import node_documents  # noqa: E402
from accel_common.placement import client as placement_client  # noqa: E402
from ironic_accel import exception as accel_exception  # noqa: E402
from ironic_accel.placement import migrate_flat  # noqa: E402

#: oslo.config project: the default files are the conductor's.
PROJECT = "ironic"
#: the client groups the commands use.
CLIENT_GROUPS = ("placement", "ironic")


def _document(conf, args):
    if args.inventory:
        with open(args.inventory, encoding="utf-8") as handle:
            return dict(json.load(handle), host=args.host)
    if not clients.is_configured(conf, "ironic"):
        raise ValueError("give --inventory FILE, or configure [ironic] to "
                         "read the host's document from its Ironic node")
    selection = node_documents.documents_from_ironic(
        clients.connection(conf, "ironic"), host=args.host)
    if not selection.documents:
        reasons = "; ".join(f"{n}: {r}" for n, r in selection.skipped.items())
        why = f": {reasons}" if reasons else ""
        raise ValueError(f"no usable inventory document for host "
                         f"{args.host} in Ironic{why}")
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
    except (accel_exception.MigrationRefused, accel_exception.ParentNotFound,
            common_exception.InvalidInventory) as exc:
        print(f"Refused: {exc}", file=sys.stderr)
        return 1
    except common_exception.PlacementError as exc:
        print(f"Placement refused a step: {exc}. Run the command again: "
              "completed steps are skipped.", file=sys.stderr)
        return 1
    for line in lines:
        print(line, file=out)
    return 0


def add_command_parsers(subparsers):
    """The ``placement`` command group."""
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


def new_conf():
    """A ConfigOpts with the client groups the commands use."""
    conf = cfg.ConfigOpts()
    for group in CLIENT_GROUPS:
        clients.register_client_opts(conf, group)
    log.register_options(conf)
    return conf


def main(argv=None):
    """Run one command; returns (and exits with) its exit code."""
    conf = new_conf()
    conf.register_cli_opt(cfg.SubCommandOpt(
        "command", title="Commands", handler=add_command_parsers))
    try:
        conf(sys.argv[1:] if argv is None else argv, project=PROJECT,
             prog="ironic-accel-manage")
    except cfg.ConfigFileParseError as error:
        # NOTE(docs): the message names the file and the line; exit code
        # 2 as for every input error of this command.
        print(f"ironic-accel-manage: {error}", file=sys.stderr)
        raise SystemExit(2)
    log.setup(conf, "ironic_accel")
    sys.exit(conf.command.func(conf, conf.command))
