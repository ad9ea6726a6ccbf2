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

"""The DRA kubelet plugin's calls, as the kubelet makes them.

Starts a real cyborg_lite (its programmer and sim agent in this process,
``--program-seconds`` per programming), the stand-in API server and
``cyborg-lite-dra-plugin`` as its own process, then over the plugin's unix
socket (gRPC v1):

``cycle``
    a new claim on a region: NodePrepareResources (read the claim, create
    and bind the ARQ, wait resolved, write the CDI spec) then
    NodeUnprepareResources (delete the ARQ, remove the spec);
``again``
    NodePrepareResources for a claim already prepared (answered from the
    checkpoint, nothing sent to cyborg_lite);
``programming``
    cycles whose profile asks for a function the region does not run, so
    each bind programs it (alternating two functions).

Prints median and p95 per call. Not a test: figures only; quote them with
the load average.

Example::

    .venv/bin/python benchmarks/dra_prepare.py --cycles 50
"""

import argparse
import logging
import os
import pathlib
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

from accel_tools import kube_standin  # noqa: E402
from benchmarks import _common  # noqa: E402
from tests.fixtures import kube_apiserver  # noqa: E402
from tests.functional.cyborg_lite_dra import env  # noqa: E402

REGION = "fpga-0000-0f-00-0-r0"


def _timed(call):
    began = time.perf_counter()
    result = call()
    return result, (time.perf_counter() - began) * 1000


def _report(name, values):
    print(f"{name:<28} n={len(values):<4} median "
          f"{statistics.median(values):7.1f} ms   p95 "
          f"{_common.percentile(values, 0.95):7.1f} ms")


def _cycle(plugin, cyborg, apiserver, profile, prepares, unprepares):
    claim = env.allocate(apiserver, plugin, REGION, profile)
    answer, ms = _timed(lambda: plugin.prepare([claim]))
    error = answer[claim[1]][0]
    if error:
        raise SystemExit(f"prepare failed: {error}")
    prepares.append(ms)
    answer, ms = _timed(lambda: plugin.unprepare([claim]))
    unprepares.append(ms)


def main():
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=50)
    parser.add_argument("--program-seconds", type=float, default=0.0)
    args = parser.parse_args()
    work = pathlib.Path(tempfile.mkdtemp(prefix="dra-bench-"))
    cyborg = env.CyborgLite(work / "cyborg",
                            program_seconds=args.program_seconds)
    apiserver = kube_standin.KubeApiServer(
        validate=kube_apiserver.validate_slice)
    plugin = env.Plugin(work / "plugin", cyborg, apiserver,
                        **{"DEFAULT.debug": "false"})
    try:
        plugin.start()
        plain = cyborg.profile()
        prepares, unprepares = [], []
        for _ in range(args.cycles):
            _cycle(plugin, cyborg, apiserver, plain, prepares, unprepares)
        _report("cycle: prepare", prepares)
        _report("cycle: unprepare", unprepares)

        claim = env.allocate(apiserver, plugin, REGION, plain)
        plugin.prepare([claim])
        again = [_timed(lambda: plugin.prepare([claim]))[1]
                 for _ in range(args.cycles)]
        plugin.unprepare([claim])
        _report("again: prepare (checkpoint)", again)

        profiles = [cyborg.profile("nlb0"), cyborg.profile("nlb3")]
        prepares, unprepares = [], []
        for index in range(args.cycles):
            _cycle(plugin, cyborg, apiserver, profiles[index % 2],
                   prepares, unprepares)
        _report(f"programming ({args.program_seconds:g} s): prepare",
                prepares)
        _report("programming: unprepare", unprepares)
        print(f"load average: {os.getloadavg()[0]:.2f}")
    finally:
        plugin.close()
        apiserver.stop()
        cyborg.close()


if __name__ == "__main__":
    main()
