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

"""``cyborg-lite-demo``: the whole product's story, end to end, on one host.

The console script: it reads the arguments, prepares the state directory
(``--state-dir``, empty or absent, or a temporary one; removed at the end
unless ``--keep``) and runs :mod:`accel_tools.demo.story`, the whole story
on embedded services (BMC emulator, Placement, Ironic, cyborg_lite), or
with ``--standalone`` :mod:`accel_tools.demo.standalone`, cyborg_lite
alone on an inventory file. Exit code 0 when every step answered as
expected.
"""

import argparse
import logging
import os
import shutil
import sys
import tempfile
import warnings

from accel_tools.demo import example_inventory
from accel_tools.demo import kubernetes
from accel_tools.demo import standalone
from accel_tools.demo import story


def main(argv=None):
    """Run the demo; exit code 0 when every step answered as expected."""
    parser = argparse.ArgumentParser(
        prog="cyborg-lite-demo", description=__doc__.splitlines()[0])
    parser.add_argument("--state-dir",
                        help="put every component's files (databases, "
                             "configuration, logs) here; it must be empty "
                             "or absent (default: a temporary directory)")
    parser.add_argument("--keep", action="store_true",
                        help="keep the state directory at the end")
    parser.add_argument("--verbose", action="store_true",
                        help="print every cyborg_lite response body")
    parser.add_argument("--standalone", action="store_true",
                        help="only the standalone walk: cyborg_lite on an "
                             "inventory file, no Ironic, Placement or Nova")
    parser.add_argument("--inventory",
                        help="with --standalone: the inventory document "
                             "to import (default: the example inventory)")
    parser.add_argument("--kubernetes", action="store_true",
                        help="only the Kubernetes walk: a container gets an "
                             "FPGA region through cyborg-lite-dra-plugin "
                             "(DRA) and CDI")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    # NOTE(demo): keep the output for the person reading it: no library
    # deprecation notices, no per-request access log.
    warnings.simplefilter("ignore")
    logging.getLogger("werkzeug").setLevel(logging.WARNING)

    if args.state_dir:
        state_dir = os.path.abspath(args.state_dir)
        if os.path.isdir(state_dir) and os.listdir(state_dir):
            parser.error(f"--state-dir {state_dir} is not empty: the demo "
                         "starts from fresh databases")
        os.makedirs(state_dir, exist_ok=True)
    else:
        state_dir = tempfile.mkdtemp(prefix="ironic-accel-demo-")
    try:
        if args.kubernetes:
            return kubernetes.run(state_dir)
        if args.standalone:
            return standalone.run(
                state_dir, args.inventory or example_inventory.find())
        return story.run(state_dir, verbose=args.verbose)
    finally:
        if args.keep:
            print(f"State kept in {state_dir}")
        else:
            shutil.rmtree(state_dir, ignore_errors=True)
