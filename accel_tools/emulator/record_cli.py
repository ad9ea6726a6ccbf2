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


"""``ironic-accel-bmc-emulator record|replay``: the command lines of
:mod:`accel_tools.emulator.recorded`.

``record --url https://bmc --username admin --out DIR`` reads the password from
``$IRONIC_ACCEL_BMC_PASSWORD`` (or ``--password-file``), so it stays out of the
process list and the shell history; ``replay --tree DIR --port 8000`` serves a
recording.
"""

import argparse
import logging
import os
import sys

from accel_tools.emulator import recorded

COMMANDS = ("record", "replay")
PASSWORD_ENV = "IRONIC_ACCEL_BMC_PASSWORD"


def parse_args(argv):
    """Parse ``record ...`` or ``replay ...`` (see ``--help``)."""
    parser = argparse.ArgumentParser(
        prog="ironic-accel-bmc-emulator",
        description="Record a BMC's accelerator-related Redfish tree, or serve a recording.")
    commands = parser.add_subparsers(dest="command", required=True)
    rec = commands.add_parser(
        "record", help="dump what accelerator discovery reads from a BMC, credentials removed",
        description="Dump the Redfish resources ironic-accel's discovery reads from a BMC "
                    "(systems, processors, PCIe devices and functions, chassis PCIe devices, "
                    "firmware inventory) into DIR in DMTF's mockup layout, with every "
                    "password, token or key removed. The password is read from $%s or "
                    "--password-file." % PASSWORD_ENV)
    rec.add_argument("--url", required=True, help="the BMC, e.g. https://10.0.0.5")
    rec.add_argument("--username", help="the BMC user (HTTP Basic)")
    rec.add_argument("--password-file", help="a file whose first line is the password")
    rec.add_argument("--out", required=True, help="the directory to write")
    rec.add_argument("--insecure", action="store_true",
                     help="do not verify the BMC's TLS certificate")
    rec.add_argument("--timeout", type=float, default=30, help="seconds per request")
    rep = commands.add_parser("replay", help="serve a recording read-only")
    rep.add_argument("--tree", required=True, help="a recording (DMTF mockup layout)")
    rep.add_argument("--host", default="127.0.0.1", help="address to listen on")
    rep.add_argument("--port", type=int, default=8000, help="port to listen on")
    rep.add_argument("--username", help="require this user (HTTP Basic)")
    rep.add_argument("--password", help="password of --username")
    args = parser.parse_args(argv)
    if args.command == "replay" and (args.username is None) != (args.password is None):
        parser.error("--username and --password go together")
    return args


def _password(args):
    if args.password_file:
        with open(args.password_file) as f:
            return f.readline().rstrip("\n")
    return os.environ.get(PASSWORD_ENV)


def main(argv, serve):
    """Run ``record`` or ``replay``; ``serve(app, host, port)`` serves a WSGI app."""
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")
    if args.command == "replay":
        try:
            tree = recorded.load_tree(args.tree)
        except (OSError, ValueError) as exc:
            print("ironic-accel-bmc-emulator replay: %s" % exc, file=sys.stderr)
            return 2
        return serve(recorded.create_app(tree, args.username, args.password),
                     args.host, args.port)
    if args.username is not None and _password(args) is None:
        print("ironic-accel-bmc-emulator record: set $%s or --password-file" % PASSWORD_ENV,
              file=sys.stderr)
        return 2
    try:
        summary = recorded.record(args.url, args.out, username=args.username,
                                  password=_password(args), verify=not args.insecure,
                                  timeout=args.timeout)
    except (recorded.RecordError, OSError) as exc:
        print("ironic-accel-bmc-emulator record: %s" % exc, file=sys.stderr)
        return 1
    print("recorded %d resource(s) into %s; %d the BMC did not serve; credentials removed "
          "from %d; see %s" % (len(summary["resources"]), args.out, len(summary["failed"]),
                               len(summary["removed"]),
                               os.path.join(args.out, recorded.RECORD_FILE)))
    return 0
