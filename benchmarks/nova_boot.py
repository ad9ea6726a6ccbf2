#!/usr/bin/env python3
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

"""Boots with a real Nova 34: what an accelerator adds to a server create.

Starts the cloud of :class:`tests.fixtures.nova.NovaCloud` (Keystone,
Placement, Glance, Nova with two nova-compute hosts and the fake virt
driver, Ironic with one accel-redfish node per host on the BMC emulator,
cyborg_lite with one sim agent per host; the Nova venv is built on first
use), then, in the same run:

``sequential``
    ``--rounds`` (default 10) rounds of three boots, one at a time, in an
    order that rotates every round: a flavor without accelerator (``none``),
    one whose device profile takes any FPGA region (``region``), and one
    asking for a function no region runs yet (``programmed``: the bind
    programs a region with the sim driver, ``--program-seconds``, default
    1.0). Each boot is timed from ``POST /servers`` to the first ``GET``
    that shows it ACTIVE (polled every ``--poll`` seconds, default 0.05),
    then deleted. One boot of each kind first warms the caches and is not
    counted. With ``--busy``, one any-region server stays ACTIVE through
    the rounds, as in a cloud where instances run: a ``region`` boot then
    goes to a region already in use instead of keeping an idle one.
``storm``
    ``--storm`` (default 14) boots at once on the two hosts: 3/7 any-region,
    2/7 ``nlb0``, 2/7 ``nlb3`` (6/4/4 for 14), which fit the hosts' 16
    handles in 4 regions if each lands on a region that can serve it.
    Prints how many went ERROR (with their faults), the time until all
    are ACTIVE or ERROR, and any region allocated beyond its handles;
    ``--storms N`` repeats it N times on the same cloud, each storm
    deleted before the next.

Prints the median and p90 of each kind and of the difference to ``none``.
Not a test: figures only. Example::

    .venv/bin/python benchmarks/nova_boot.py
    .venv/bin/python benchmarks/nova_boot.py --rounds 3 --storm 14 --debug
    .venv/bin/python benchmarks/nova_boot.py --rounds 0 --storms 10
    .venv/bin/python benchmarks/nova_boot.py --busy --storm 0

``--debug`` turns on the debug logs of cyborg_lite and Nova (they then
say where a boot's time goes; the figures are a little slower) and keeps
the work directory (``--keep`` alone keeps it too).
"""

import argparse
import concurrent.futures
import os
import re
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

from benchmarks import _common  # noqa: E402
from tests.fixtures import nova as nova_fixtures  # noqa: E402

KINDS = ("none", "region", "programmed")
FPGA = {"resources:FPGA": "1",
        "trait:" + nova_fixtures.FPGA_TRAIT: "required"}


def _function_trait(function):
    return f"CUSTOM_FPGA_FUNCTION_ID_INTEL_{function.upper()}"


#: cyborg_lite's requests in a boot, by what Nova makes them for.
STEPS = (("lookup", re.compile(r'"GET /v2/device_profiles\?name=')),
         ("create", re.compile(r'"POST /v2/accelerator_requests ')),
         ("bind", re.compile(r'"PATCH /v2/accelerator_requests ')),
         ("resolve", re.compile(r'"GET /v2/accelerator_requests\?')))
#: the request time at the end of a gunicorn access log line (%(L)ss).
_SECONDS = re.compile(r" ([0-9.]+)s$")


def _access_lines(cloud):
    with open(cloud.cyborg.workdir / "access.log") as f:
        return f.read().splitlines()


def server_times(lines):
    """``{step: ms}`` that cyborg_lite's API spent on one boot's requests
    (its gunicorn access log lines)."""
    spent = dict.fromkeys(name for name, _ in STEPS)
    for line in lines:
        found = _SECONDS.search(line)
        name = next((name for name, pattern in STEPS
                     if pattern.search(line)), None)
        if found and name:
            spent[name] = (spent[name] or 0) + float(found[1]) * 1000
    return spent


def _timed_boot(cloud, flavor, name, poll):
    """Seconds from POST /servers to ACTIVE (or ERROR); the server;
    cyborg_lite's server time on it (:func:`server_times`)."""
    before = len(_access_lines(cloud))
    began = time.monotonic()
    server_id = cloud.create_server(flavor, name)
    server = cloud.wait_server(server_id, interval=poll)
    secs = time.monotonic() - began
    return secs, server, server_times(_access_lines(cloud)[before:])


def _check(cloud, kind, function, server, problems):
    if server["status"] != "ACTIVE":
        problems.append(f"{kind} {server['id']} {server['status']}: "
                        f"{(server.get('fault') or {}).get('message')}")
        return
    if kind == "none":
        return
    arqs = cloud.arqs(server["id"])
    if len(arqs) != 1 or arqs[0]["state"] != "Bound":
        problems.append(f"{kind} {server['id']}: ARQs {arqs}")
    elif function and _function_trait(function) not in cloud.traits(
            arqs[0]["device_rp_uuid"]):
        problems.append(f"{kind} {server['id']}: region "
                        f"{arqs[0]['device_rp_uuid']} not running "
                        f"{function}")


def sequential(cloud, flavors, rounds, poll):
    """``{kind: [seconds]}`` of ``rounds`` rounds, ``{kind: [{step:
    ms}]}`` of cyborg_lite's server time, and the problems seen."""
    times = {kind: [] for kind in KINDS}
    spent = {kind: [] for kind in KINDS}
    problems = []
    programmed = iter(range(rounds + 1))

    def one(kind, counted):
        function = None
        if kind == "programmed":
            function = f"prog{next(programmed)}"
            flavor = flavors[function]
        else:
            flavor = flavors[kind]
        secs, server, steps = _timed_boot(cloud, flavor, f"seq-{kind}",
                                          poll)
        _check(cloud, kind, function, server, problems)
        cloud.delete_server(server["id"])
        if counted:
            times[kind].append(secs)
            spent[kind].append(steps)

    for kind in KINDS:
        one(kind, counted=False)
    for n in range(rounds):
        order = KINDS[n % 3:] + KINDS[:n % 3]
        for kind in order:
            one(kind, counted=True)
    return times, spent, problems


def storm(cloud, flavors, count, poll):
    """Boot ``count`` mixed servers at once; ``(seconds, servers)``."""
    nlb = 2 * count // 7
    wanted = ["nlb0"] * nlb + ["nlb3"] * nlb + ["region"] * (count - 2 * nlb)
    began = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(count) as pool:
        ids = list(pool.map(
            lambda n: cloud.create_server(flavors[wanted[n]], f"storm-{n}"),
            range(count)))
    done = [cloud.wait_server(server_id, interval=poll)
            for server_id in ids]
    return time.monotonic() - began, list(zip(wanted, done))


def _stats(values):
    return (statistics.median(values) * 1000,
            _common.percentile(values, 0.9) * 1000)


def report(times, program_seconds):
    print(f"{'kind':<12}{'n':>4}{'median ms':>12}{'p90 ms':>10}"
          f"{'- none, median':>17}{'p90':>8}")
    base = times["none"]
    for kind in KINDS:
        median, p90 = _stats(times[kind])
        line = f"{kind:<12}{len(times[kind]):>4}{median:>12.0f}{p90:>10.0f}"
        if kind != "none":
            deltas = [a - b for a, b in zip(times[kind], base)]
            d_median, d_p90 = _stats(deltas)
            line += f"{d_median:>+17.0f}{d_p90:>+8.0f}"
        print(line)
    print(f"(round by round differences; programming takes "
          f"{program_seconds * 1000:.0f} ms in the sim driver)")
    print("targets: region - none <= 50 ms; programmed - none <= "
          f"{program_seconds * 1000 + 150:.0f} ms")


def report_server_times(spent):
    """cyborg_lite's own share of each kind's boots."""
    names = [name for name, _ in STEPS]
    print("\ncyborg_lite's server time per boot (its gunicorn access log), "
          "median ms:")
    print(f"{'kind':<12}" + "".join(f"{n:>9}" for n in names)
          + f"{'total':>9}")
    for kind in KINDS[1:]:
        row = f"{kind:<12}"
        for name in names:
            values = [s[name] for s in spent[kind] if s[name] is not None]
            row += (f"{statistics.median(values):>9.1f}" if values
                    else f"{'-':>9}")
        totals = [sum(v for v in s.values() if v) for s in spent[kind]]
        print(row + f"{statistics.median(totals):>9.1f}")
    print("(the rest of a kind's difference to 'none' is Nova's own work "
          "for an accelerator: its client calls, the nested allocation "
          "candidates and claim)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--storm", type=int, default=14)
    parser.add_argument("--storms", type=int, default=1)
    parser.add_argument("--program-seconds", type=float, default=1.0)
    parser.add_argument("--poll", type=float, default=0.05)
    parser.add_argument("--busy", action="store_true")
    parser.add_argument("--debug", action="store_true")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix="nova-boot-")
    functions = ("nlb0", "nlb3") + tuple(
        f"prog{n}" for n in range(args.rounds + 1))
    print("load average before: %.1f %.1f %.1f" % os.getloadavg(),
          flush=True)
    began = time.monotonic()
    cloud = nova_fixtures.NovaCloud(
        workdir, functions=functions, program_seconds=args.program_seconds,
        debug=args.debug)
    try:
        cloud.start()
        phases = ", ".join(f"{name} {secs:.0f} s"
                           for name, secs in cloud.timings.items())
        print(f"cloud up in {time.monotonic() - began:.0f} s ({phases}); "
              f"work directory {workdir}", flush=True)
        flavors = {"none": cloud.flavor("none"),
                   "region": cloud.flavor("region", [FPGA])}
        for function in functions:
            flavors[function] = cloud.flavor(
                function, [dict(FPGA, **{"accel:function_id": function})])
        if args.rounds:
            busy = None
            if args.busy:
                busy = cloud.wait_server(cloud.create_server(
                    flavors["region"], "busy"))["id"]
            times, spent, problems = sequential(cloud, flavors, args.rounds,
                                                args.poll)
            if busy:
                cloud.delete_server(busy)
            print(f"\nsequential boots, {args.rounds} rounds "
                  f"(poll {args.poll * 1000:.0f} ms"
                  f"{', one region in use throughout' if busy else ''}):")
            report(times, args.program_seconds)
            report_server_times(spent)
            for problem in problems:
                print("  problem:", problem)
        printed = set()
        for number in range(1, args.storms + 1 if args.storm else 1):
            secs, result = storm(cloud, flavors, args.storm, args.poll)
            errors = [(kind, s) for kind, s in result
                      if s["status"] != "ACTIVE"]
            kinds = {k: sum(1 for kind, _ in result if kind == k)
                     for k in ("region", "nlb0", "nlb3")}
            over = {rp: used for rp in cloud.fpga_rps
                    if (used := cloud.usages(rp).get("FPGA", 0)) > 4}
            print(f"\nstorm {number}/{args.storms}: {args.storm} concurrent "
                  f"boots on {len(cloud.hosts)} hosts ({kinds}; 16 handles "
                  f"in 4 regions): {len(errors)} ERROR, all settled in "
                  f"{secs:.1f} s; regions over their 4 handles: "
                  f"{over or 'none'}", flush=True)
            for kind, server in errors:
                print(f"  ERROR {kind} {server['id']}: "
                      f"{(server.get('fault') or {}).get('message')}")
            for line in cloud.grep("cyborg-api", "Bind of .* failed|"
                                                 "allocation to .* refused|"
                                                 "not written"):
                if line not in printed:
                    printed.add(line)
                    print("  cyborg_lite:", line.split("] ", 1)[-1][:300])
            for _, server in result:
                cloud.delete_server(server["id"], wait=False)
            for _, server in result:
                cloud.delete_server(server["id"])
        left = cloud.arqs()
        print(f"\nafter deleting everything: {len(left)} ARQs left")
    finally:
        cloud.stop()
        if not (args.keep or args.debug):
            shutil.rmtree(workdir, ignore_errors=True)
    print("load average after: %.1f %.1f %.1f" % os.getloadavg())


if __name__ == "__main__":
    main()
