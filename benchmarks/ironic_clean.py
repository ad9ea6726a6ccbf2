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

"""How long Ironic takes to start, and a manual clean with one accelerator
firmware step, and how much of that clean is the plugin's own time.

Runs real Ironic all-in-one (tests/fixtures/ironic.py) and the BMC emulator
with a 2 s update task::

    .venv/bin/python benchmarks/ironic_clean.py [--poll-interval 2] [--runs 3]

The plugin's own time is read from the Ironic log: from Ironic executing the
step to the plugin's SimpleUpdate being accepted (checksum, BMC reads, POST),
plus from the moment the BMC task could at best have ended (start + task
time) to the inventory refresh after confirmation (poll latency, confirm,
refresh). The rest of the wall time is Ironic's own work (locks, its own
Redfish calls to cache vendor/boot mode/firmware before and after cleaning,
state changes) and this script's 0.2 s status polling. Quote the figures
with the load average printed at the end.
"""

import argparse
import datetime
import os
import pathlib
import re
import shutil
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from accel_tools.embedded import bmc as embedded_bmc  # noqa: E402
from accel_tools.embedded import images as embedded_images  # noqa: E402
from accel_tools.embedded import ironic as embedded_ironic  # noqa: E402
from tests.fixtures import ironic as ironic_fixtures  # noqa: E402

_STAMP = r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+)"


def _times(log_file, node_id, pattern):
    found = []
    with open(log_file, errors="replace") as f:
        for line in f:
            if node_id in line and re.search(pattern, line):
                stamp = re.match(_STAMP, line)
                if stamp:
                    found.append(datetime.datetime.strptime(
                        stamp.group(1), "%Y-%m-%d %H:%M:%S.%f").timestamp())
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--poll-interval", type=float, default=2.0,
                        help="[ironic_accel]task_poll_interval (default 2, "
                             "the option's default)")
    parser.add_argument("--task-seconds", type=float, default=2.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--keep", action="store_true",
                        help="keep the work directory (Ironic log, state)")
    args = parser.parse_args()

    workdir = pathlib.Path(tempfile.mkdtemp(prefix="ironic-clean-bench-"))
    server = ironic_fixtures.IronicServer(str(workdir),
                                          poll_interval=args.poll_interval)
    started = server.start()
    print(f"ironic start: {started:.2f} s (spawn to first API answer)")
    (workdir / "bmc").mkdir()
    bmc = embedded_bmc.BmcEmulator(workdir / "bmc").start()
    images = embedded_images.ImageServer(workdir)
    try:
        baremetal = server.connection().baremetal
        bmc.set_faults(task_seconds=args.task_seconds)
        node = embedded_ironic.enroll(baremetal, bmc, name="bench-node")
        began = time.monotonic()
        embedded_ironic.manage(baremetal, node)
        print(f"enroll -> manageable (verify incl. inventory refresh): "
              f"{time.monotonic() - began:.2f} s")
        for run in range(args.runs):
            version = f"3.{run}.0"
            path, checksum = embedded_images.make_firmware_image(workdir,
                                                              version)
            step = {"interface": "firmware",
                    "step": "update_accelerator_firmware",
                    "args": {"settings": [{
                        "accelerator": "fpga0",
                        "url": images.url_for(path),
                        "checksum": checksum, "version": version}]}}
            began = time.monotonic()
            result = embedded_ironic.clean(baremetal, node, [step],
                                           timeout=300)
            wall = time.monotonic() - began
            if result.provision_state != "manageable":
                print(f"run {run}: clean failed: {result.last_error}")
                continue
            log = server.log_file
            executing = _times(log, node.id, r"Executing .*"
                               r"update_accelerator_firmware")[-1]
            posted = _times(log, node.id, r"update from .* started")[-1]
            finished = _times(log, node.id, r"update_accelerator_firmware "
                              r"finished")[-1]
            refreshed = [t for t in _times(log, node.id,
                                           r"inventory refreshed")
                         if t >= finished][0]
            best_end = posted + args.task_seconds
            own = (posted - executing) + (refreshed - best_end)
            print(f"run {run}: clean wall {wall:.2f} s; BMC task "
                  f"{args.task_seconds:.1f} s; plugin own {own:.2f} s "
                  f"(start {posted - executing:.2f} s, poll latency + "
                  f"confirm + refresh {refreshed - best_end:.2f} s); "
                  f"Ironic and the rest {wall - own - args.task_seconds:.2f} "
                  f"s")
    finally:
        images.stop()
        bmc.stop()
        server.stop()
        if args.keep:
            print(f"work directory: {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    print("load average: %.2f %.2f %.2f" % os.getloadavg())


if __name__ == "__main__":
    main()
