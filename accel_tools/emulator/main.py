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


"""``ironic-accel-bmc-emulator``: serve the emulator over HTTP.

``ironic-accel-bmc-emulator record ...`` and ``... replay ...`` record a real
BMC's tree and serve a recording (:mod:`accel_tools.emulator.record_cli`).
"""

import argparse
import logging
import signal
import sys

from werkzeug import serving

from accel_tools.emulator import app as emulator_app
from accel_tools.emulator import record_cli
from accel_tools.emulator import resources as res


def parse_args(argv=None):
    """Parse the command line (see ``--help``)."""
    parser = argparse.ArgumentParser(
        prog="ironic-accel-bmc-emulator",
        description="A Redfish BMC emulator with accelerators (FPGA, GPU) for "
                    "ironic-accel tests and demos.")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=8000, help="port to listen on")
    parser.add_argument("--systems", type=int, default=1,
                        help="number of systems (Systems/1..N)")
    parser.add_argument("--state-file", required=True,
                        help="JSON state file (created if missing; survives restarts)")
    parser.add_argument("--username", help="require this user (Basic auth or session)")
    parser.add_argument("--password", help="password of --username")
    parser.add_argument("--quiet", action="store_true", help="do not log every request")
    parser.add_argument("--profile", default="simple", choices=res.UPDATE_PROFILES,
                        help="how the UpdateService takes images: %s"
                             % ", ".join(res.UPDATE_PROFILES))
    args = parser.parse_args(argv)
    if (args.username is None) != (args.password is None):
        parser.error("--username and --password go together")
    if args.systems < 1:
        parser.error("--systems must be at least 1")
    return args


def serve(app, host, port):
    """Serve ``app`` until SIGINT or SIGTERM."""
    server = serving.make_server(host, port, app, threaded=True)

    def _stop(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _stop)
    logging.getLogger(__name__).info("Redfish BMC emulator on http://%s:%d/redfish/v1",
                                     host, server.port)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


def main(argv=None):
    """Run the emulator until SIGINT or SIGTERM (or a ``record``/``replay`` command)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in record_cli.COMMANDS:
        return record_cli.main(argv, serve)
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        app = emulator_app.create_app(args.state_file, systems=args.systems,
                                      username=args.username, password=args.password,
                                      profile=args.profile)
    except ValueError as exc:
        print("ironic-accel-bmc-emulator: %s" % exc, file=sys.stderr)
        return 2
    return serve(app, args.host, args.port)


if __name__ == "__main__":
    sys.exit(main())
