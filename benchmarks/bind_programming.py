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

"""Bind throughput with and without programming, and a function pool.

Starts its own cyborg_lite under gunicorn (one worker: the embedded agent
and its ``sim`` driver live in the API process, on the in-process
transport; ``--db sqlite|mariadb``), with an inventory of one FPGA whose
regions serve the scenarios below, and measures with real HTTP calls:

``instant``
    binds whose profile asks for no function (the baseline);
``loaded``
    binds asking for ``accel:function_id=nlb0`` on a region that already
    runs it (target: within 20% of ``instant``);
``programming``
    binds that need programming (``sim_program_seconds = 0``, so the
    figure is cyborg_lite's own overhead: PATCH -> region programming ->
    agent RPC -> Bound); each is unbound so the next one reprograms;
``pool``
    a pool of pre-programmed regions (``[pools] policies``, filled by the
    reconciler at API start) serving whole cycles (create ARQ, bind, wait
    resolved, delete): binds per minute it sustains.

Prints median/p95 per scenario and binds per second (per minute for the
pool). Not a test: figures only; quote them with the load average.

Example::

    .venv/bin/python benchmarks/bind_programming.py --binds 200
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

from benchmarks import _common  # noqa: E402
from tests.fixtures import cyborg_server  # noqa: E402
from tests.functional.cyborg_lite.programming import env  # noqa: E402

POOL_RC = "CUSTOM_FPGA_POOL"


def document(binds, pool_size):
    """Regions: 0 instant, 1 loaded (both ``binds`` handles), 2 and 3
    alternate for programming, then ``pool_size`` pool regions."""
    doc = cyborg_server.make_inventory(
        handles_per_region=(binds, binds, 1, 1) + (1,) * pool_size)
    for region in doc["devices"][0]["regions"][4:]:
        region["resource_class"] = POOL_RC
    return doc


def timed(func):
    started = time.perf_counter()
    result = func()
    return result, (time.perf_counter() - started) * 1000


def report(name, millis, total_seconds, count):
    print(f"{name:12s} n={count:4d}  median {statistics.median(millis):7.2f}"
          f" ms  p95 {_common.percentile(millis, 0.95):7.2f} ms  "
          f"{count / total_seconds:7.1f} create+bind/s")


def run_binds(client, host, targets, binds):
    """``binds`` binds for each ``name: (rp, profile)`` of ``targets``,
    taking turns, so a machine slowing down mid-run affects every target
    alike. :returns: {name: (PATCH ms list, seconds spent)}."""
    results = {name: ([], 0.0) for name in targets}
    for _ in range(binds):
        for name, (rp, profile) in targets.items():
            started = time.perf_counter()
            (arq,) = client.arqs(profile)
            (status, _), ms = timed(lambda: client.bind(
                [arq], rp, str(uuid.uuid4()), host))
            assert status == 202, status
            millis, seconds = results[name]
            millis.append(ms)
            results[name] = (millis, seconds + time.perf_counter() - started)
    return results


def run_programming(client, host, rps, binds):
    """Each bind needs programming: alternate functions, unbind after."""
    patch_ms, bound_ms = [], []
    profiles = [client.profile("nlb0"), client.profile("nlb3")]
    started = time.perf_counter()
    for index in range(binds):
        rp = rps[index % 2]
        (arq,) = client.arqs(profiles[(index // 2) % 2])
        t0 = time.perf_counter()
        status, body = client.bind([arq], rp, str(uuid.uuid4()), host)
        assert status == 202, body
        patch_ms.append((time.perf_counter() - t0) * 1000)
        shown = client.wait_resolved(arq)
        assert shown["state"] == "Bound", shown
        bound_ms.append((time.perf_counter() - t0) * 1000)
        client.unbind([arq])
    return patch_ms, bound_ms, time.perf_counter() - started


def run_pool(client, host, rps, seconds):
    profile_name = f"dp-pool-{uuid.uuid4().hex[:6]}"
    status, body = client.call("POST", "/v2/device_profiles", env.ADMIN, [{
        "name": profile_name, "groups": [{f"resources:{POOL_RC}": "1",
                                          "accel:function_id": "nlb3"}]}])
    assert status == 201, body
    count, millis = 0, []
    deadline = time.perf_counter() + seconds
    started = time.perf_counter()
    while time.perf_counter() < deadline:
        rp = rps[count % len(rps)]
        t0 = time.perf_counter()
        (arq,) = client.arqs(profile_name)
        instance = str(uuid.uuid4())
        status, body = client.bind([arq], rp, instance, host)
        assert status == 202, body
        assert client.wait_resolved(arq)["state"] == "Bound"
        status, _ = client.call(
            "DELETE", f"/v2/accelerator_requests?instance={instance}",
            env.NOVA)
        assert status == 204
        millis.append((time.perf_counter() - t0) * 1000)
        count += 1
    return millis, time.perf_counter() - started


def wait_pool(server, size, timeout=120):
    deadline = time.monotonic() + timeout
    while True:
        out = server.manage("pools", "status", "--json").stdout
        rows = json.loads(out)
        if rows and rows[0]["ready"] >= size:
            return rows[0]
        if time.monotonic() > deadline:
            raise SystemExit(f"pool not filled: {rows}")
        time.sleep(0.5)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binds", type=int, default=200)
    parser.add_argument("--programming-binds", type=int, default=50)
    parser.add_argument("--pool-size", type=int, default=4)
    parser.add_argument("--pool-seconds", type=float, default=15)
    parser.add_argument("--db", choices=("sqlite", "mariadb"),
                        default="sqlite")
    args = parser.parse_args(argv)

    workdir = tempfile.mkdtemp(prefix="bench-programming-")
    doc = document(args.binds + 10, args.pool_size)
    host = doc["host"]
    rps = [r["rp_uuid"] for r in doc["devices"][0]["regions"]]
    options = {
        "agent": {"host": f"bench-{uuid.uuid4().hex[:8]}",
                  "sim_state_dir": os.path.join(workdir, "sim"),
                  "sim_inventory_file": env.write_document(
                      __import__("pathlib").Path(workdir) / "inv.json", doc),
                  "image_catalog_dir": env.make_catalog(
                      __import__("pathlib").Path(workdir) / "catalog"),
                  "sim_program_seconds": 0},
        "programming": {"reconcile_on_start": True,
                        "reconcile_interval": 0},
        "pools": {"policies": f"nlb3:{args.pool_size}:{POOL_RC}"},
    }
    database = (cyborg_server.mariadb_database() if args.db == "mariadb"
                else None)
    db_url = database.__enter__() if database else None
    server = cyborg_server.CyborgServer(workdir, db_url=db_url,
                                        inventories=[doc], workers=1,
                                        options=options)
    try:
        server.prepare()
        server.start()
        client = env.Client(server.url)
        print(f"load average {os.getloadavg()[0]:.2f}; db {args.db}; "
              f"gunicorn 1 sync worker; embedded agent (sim, 0 s)")
        pool = wait_pool(server, args.pool_size)
        print(f"pool filled at start: {pool}")
        # Region 1 runs nlb0 before the 'loaded' binds.
        status, body = client.program(client.deployable(rps[1])["uuid"],
                                      value={"function_id": "nlb0"})
        assert status == 200, body
        targets = {"instant": (rps[0], client.profile()),
                   "loaded": (rps[1], client.profile("nlb0"))}
        run_binds(client, host, targets, 5)
        results = run_binds(client, host, targets, args.binds)
        for name, (millis, seconds) in results.items():
            report(name, millis, seconds, args.binds)
        instant, loaded = results["instant"][0], results["loaded"][0]
        ratio = statistics.median(loaded) / statistics.median(instant)
        print(f"loaded / instant median: {ratio:.2f} (target <= 1.20)")

        patch_ms, bound_ms, t_prog = run_programming(
            client, host, rps[2:4], args.programming_binds)
        report("programming", patch_ms, t_prog, args.programming_binds)
        print(f"{'':12s} PATCH->Bound median "
              f"{statistics.median(bound_ms):7.2f} ms  p95 "
              f"{_common.percentile(bound_ms, 0.95):7.2f} ms (sim programs "
              f"in 0 s; "
              f"includes the 50 ms poll of the in-process transport and "
              f"the client's 50 ms polling)")

        millis, t_pool = run_pool(client, host, rps[4:], args.pool_seconds)
        print(f"{'pool':12s} n={len(millis):4d}  cycle median "
              f"{statistics.median(millis):7.2f} ms  "
              f"{len(millis) / t_pool * 60:8.0f} binds/min "
              f"({args.pool_size} pre-programmed regions, create+bind+"
              f"resolved+delete per bind, no programming)")
    finally:
        server.stop()
        if database:
            database.__exit__(None, None, None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
