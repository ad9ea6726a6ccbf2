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

"""ARQ cycle benchmark: create -> bind -> get-resolved, as Nova does it.

Starts its own cyborg_lite under gunicorn (``--db sqlite|mariadb|postgresql``)
with a Nova stand-in receiving the bound events (in its own process, as Nova
is, so it does not compete with the measuring client for the interpreter
lock; these binds need no programming, so they send none unless
``--notify-instant-binds``), then runs ``--cycles`` cycles for each
``--concurrency`` level. Each cycle is one new instance:

1. ``POST /v2/accelerator_requests`` (one ARQ),
2. ``PATCH /v2/accelerator_requests`` in Nova's body form, service role,
3. ``GET /v2/accelerator_requests?instance=&bind_state=resolved``, repeated
   while it answers 423.

The inventory has one region with enough handles for every cycle, so nothing
is unbound or deleted between cycles. Prints median and p95 per step and for
the whole cycle, and cycles/s; then, in the same run on the same server, the
floor (three requests to ``GET /v2``, a route that does no work) and the
ratio cycle / floor. Not a test: figures only.

With ``--round-trips``, it times nothing: one worker reaches the database
through a loopback proxy that counts round trips (a message of the client
after an answer of the server), and it prints how many each step makes,
and the Nova event of each cycle (its claim and its record; none unless
``[nova] notify_instant_binds`` is set, as a bind here needs no
programming), in 20 cycles.

Reference: real Cyborg 17 on a machine like this one, sequential: median
cycle 223 ms (create 33, bind 164, get 23). Target: < 20 ms on sqlite.

Example::

    .venv/bin/python benchmarks/arq_cycle.py --db sqlite --cycles 200 \\
        --concurrency 1 8
"""

import argparse
import concurrent.futures
import contextlib
import itertools
import os
import socket
import statistics
import sys
import tempfile
import threading
import time
import uuid

import requests
import sqlalchemy as sa

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

from benchmarks import _common  # noqa: E402
from tests.fixtures import cyborg_server  # noqa: E402
from tests.fixtures.nova_standin import NovaStandinProcess  # noqa: E402

STEPS = ("create", "bind", "get_resolved", "cycle")
WARMUP = 10
#: cycles (and floors) per block when measuring their ratio.
BLOCK = 20


class Cycler:
    """Runs ARQ cycles against one server, recording step timings (ms)."""

    def __init__(self, url, dp_name, host, rp_uuid):
        self.api = url + "/v2"
        self.dp_name = dp_name
        self.host = host
        self.rp_uuid = rp_uuid
        self.headers = {"X-Project-Id": uuid.uuid4().hex,
                        "X-Roles": "member,reader",
                        "X-Service-Roles": "service"}
        self._local = threading.local()

    def _session(self):
        if not hasattr(self._local, "session"):
            self._local.session = requests.Session()
            self._local.session.headers.update(self.headers)
        return self._local.session

    def cycle(self, mark=lambda: None):
        """One create -> bind -> get-resolved cycle; returns step timings.

        :param mark: called before each step and after the last.
        """
        session = self._session()
        instance = str(uuid.uuid4())
        timings = {}
        mark()
        start = time.perf_counter()

        resp = session.post(f"{self.api}/accelerator_requests",
                            json={"device_profile_name": self.dp_name})
        if resp.status_code != 201:
            raise RuntimeError(f"create: {resp.status_code} {resp.text}")
        (arq,) = resp.json()["arqs"]
        after_create = time.perf_counter()
        mark()

        resp = session.patch(f"{self.api}/accelerator_requests", json={
            arq["uuid"]: [
                {"path": "/hostname", "op": "add", "value": self.host},
                {"path": "/device_rp_uuid", "op": "add",
                 "value": self.rp_uuid},
                {"path": "/instance_uuid", "op": "add", "value": instance}]})
        if resp.status_code != 202:
            raise RuntimeError(f"bind: {resp.status_code} {resp.text}")
        after_bind = time.perf_counter()
        mark()

        while True:
            resp = session.get(f"{self.api}/accelerator_requests",
                               params={"instance": instance,
                                       "bind_state": "resolved"})
            if resp.status_code != 423:
                break
            time.sleep(0.001)
        if resp.status_code != 200 or [
                a["state"] for a in resp.json()["arqs"]] != ["Bound"]:
            raise RuntimeError(f"get: {resp.status_code} {resp.text}")
        end = time.perf_counter()
        mark()

        timings["create"] = (after_create - start) * 1000
        timings["bind"] = (after_bind - after_create) * 1000
        timings["get_resolved"] = (end - after_bind) * 1000
        timings["cycle"] = (end - start) * 1000
        return timings

    def floor(self):
        """The floor of a cycle on this server: three requests (as many as
        a cycle makes) to the version document, which does no work."""
        session = self._session()
        start = time.perf_counter()
        for _ in range(3):
            resp = session.get(self.api)
            if resp.status_code != 200:
                raise RuntimeError(f"floor: {resp.status_code} {resp.text}")
        return {"floor": (time.perf_counter() - start) * 1000}

    def run(self, cycles, concurrency, step=None):
        """Run ``cycles`` cycles on ``concurrency`` client threads.

        :returns: (list of timing dicts, wall-clock seconds).
        """
        counter = itertools.count()
        results = []
        lock = threading.Lock()

        step = step or self.cycle

        def worker():
            while next(counter) < cycles:
                timings = step()
                with lock:
                    results.append(timings)

        start = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
            futures = [pool.submit(worker) for _ in range(concurrency)]
            for future in futures:
                future.result()
        return results, time.perf_counter() - start


class RoundTripCounter:
    """A loopback TCP proxy to a database server that counts round trips:
    each message a client sends after the server's last answer."""

    def __init__(self, url):
        url = sa.engine.make_url(url)
        self.target = (url.host, url.port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = url.set(host="127.0.0.1",
                           port=self.listener.getsockname()[1]
                           ).render_as_string(hide_password=False)
        self.count = 0
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            client, _ = self.listener.accept()
            server = socket.create_connection(self.target)
            answered = [True]
            for source, sink, up in ((client, server, True),
                                     (server, client, False)):
                threading.Thread(target=self._pump, daemon=True, args=(
                    source, sink, up, answered)).start()

    def _pump(self, source, sink, up, answered):
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                with self._lock:
                    if up and answered[0]:
                        self.count += 1
                    answered[0] = not up
                sink.sendall(data)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


def count_round_trips(cycler, counter, cycles=20, quiet=0.15):
    """Median round trips per step of ``cycles`` cycles, and of the Nova
    event that follows each (counted until ``quiet`` s pass without
    one)."""
    counts = {step: [] for step in ("create", "bind", "get_resolved",
                                    "Nova event")}
    for _ in range(cycles):
        marks = []
        cycler.cycle(mark=lambda: marks.append(counter.count))
        before = counter.count
        while True:
            time.sleep(quiet)
            if counter.count == before:
                break
            before = counter.count
        marks.append(before)
        for step, start, end in zip(counts, marks, marks[1:]):
            counts[step].append(end - start)
    return {step: statistics.median(values)
            for step, values in counts.items()}


def _options(args):
    """The server's extra configuration for these arguments."""
    if args.notify_instant_binds:
        return {"nova": {"notify_instant_binds": "true"}}
    return None


def round_trips(args, db_url, nova, document, region):
    """``--round-trips``: print the round trips of each step."""
    counter = RoundTripCounter(db_url)
    with tempfile.TemporaryDirectory(prefix="arq-bench-") as workdir, \
            cyborg_server.CyborgServer(
                workdir, db_url=counter.url, inventories=[document],
                nova_url=nova.endpoint if nova else None,
                workers=1, options=_options(args)) as server:
        dp_name = f"bench-{uuid.uuid4().hex[:8]}"
        requests.post(f"{server.url}/v2/device_profiles", json=[
            {"name": dp_name, "groups": [{"resources:FPGA": "1"}]}]
        ).raise_for_status()
        cycler = Cycler(server.url, dp_name, document["host"],
                        region["rp_uuid"])
        cycler.run(WARMUP, 1)
        trips = count_round_trips(cycler, counter)
    print(f"cyborg_lite on {args.db}, 1 worker, "
          f"{'Nova stand-in' if nova else 'no Nova'}: database round "
          f"trips per step (median of 20 cycles): " + ", ".join(
              f"{step} {count:g}" for step, count in trips.items()))


def server_cpu_seconds(pid):
    """CPU seconds (user + system) used so far by gunicorn ``pid`` and its
    workers, from /proc; less sensitive to other load than wall time."""
    tick = os.sysconf("SC_CLK_TCK")
    pids = [pid]
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            pids += [int(p) for p in f.read().split()]
    except OSError:
        return None
    total = 0
    for one in pids:
        try:
            with open(f"/proc/{one}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / tick


def report(label, results, wall, server_cpu=None):
    """Print one block of figures."""
    print(f"\n{label}: {len(results)} cycles in {wall:.2f} s = "
          f"{len(results) / wall:.1f} cycles/s")
    if server_cpu is not None:
        print(f"  server CPU per cycle: "
              f"{server_cpu / len(results) * 1000:.1f} ms "
              f"(all gunicorn processes, user + system)")
    print(f"  {'step':<14}{'median ms':>10}{'p95 ms':>10}")
    for step in STEPS:
        values = [r[step] for r in results]
        print(f"  {step:<14}{statistics.median(values):>10.2f}"
              f"{_common.percentile(values, 0.95):>10.2f}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", choices=["sqlite", "mariadb", "postgresql"],
                        default="sqlite")
    parser.add_argument("--cycles", type=int, default=200)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8],
                        help="client threads; one run per value")
    parser.add_argument("--runs", type=int, default=1,
                        help="repeat each concurrency level this many "
                             "times; prints each run's median cycle and "
                             "the figures of all runs pooled")
    parser.add_argument("--workers", type=int, default=4,
                        help="gunicorn worker processes")
    parser.add_argument("--worker-class", default="sync",
                        help="gunicorn worker class (sync, gthread)")
    parser.add_argument("--threads", type=int, default=1,
                        help="threads per gunicorn worker (gthread)")
    parser.add_argument("--no-nova", action="store_true",
                        help="run standalone: no Nova stand-in, no events")
    parser.add_argument("--notify-instant-binds", action="store_true",
                        help="send Nova the event of every bind, as "
                             "[nova] notify_instant_binds does")
    parser.add_argument("--round-trips", action="store_true",
                        help="time nothing: count the database round "
                             "trips of each step (MariaDB, PostgreSQL)")
    args = parser.parse_args(argv)
    if args.round_trips and args.db == "sqlite":
        parser.error("--round-trips counts a database server's round trips")

    handles = WARMUP + args.cycles * len(args.concurrency) * (args.runs + 1)
    document = cyborg_server.make_inventory(handles_per_region=(handles,))
    region = document["devices"][0]["regions"][0]
    with contextlib.ExitStack() as stack:
        nova = None if args.no_nova else stack.enter_context(
            NovaStandinProcess())
        db_url = stack.enter_context(_common.database(args.db))
        if args.round_trips:
            return round_trips(args, db_url, nova, document, region)
        workdir = stack.enter_context(
            tempfile.TemporaryDirectory(prefix="arq-bench-"))
        server = cyborg_server.CyborgServer(
            workdir, db_url=db_url, inventories=[document],
            nova_url=nova.endpoint if nova else None, workers=args.workers,
            worker_class=args.worker_class, threads=args.threads,
            options=_options(args))
        started = time.perf_counter()
        stack.enter_context(server)
        print(f"cyborg_lite on {args.db}, gunicorn -w {args.workers} "
              f"-k {args.worker_class} --threads {args.threads}, "
              f"{'Nova stand-in' if nova else 'no Nova'}; one region with "
              f"{handles} handles; ready in "
              f"{time.perf_counter() - started:.1f} s")

        dp_name = f"bench-{uuid.uuid4().hex[:8]}"
        resp = requests.post(f"{server.url}/v2/device_profiles", json=[
            {"name": dp_name, "groups": [{"resources:FPGA": "1"}]}])
        resp.raise_for_status()
        cycler = Cycler(server.url, dp_name, document["host"],
                        region["rp_uuid"])
        cycler.run(WARMUP, 1)

        print(f"load average before the runs: "
              f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        for concurrency in args.concurrency:
            results, wall, cpu = [], 0.0, 0.0
            for run in range(args.runs):
                cpu_before = server_cpu_seconds(server.process.pid)
                run_results, run_wall = cycler.run(args.cycles, concurrency)
                cpu_after = server_cpu_seconds(server.process.pid)
                results += run_results
                wall += run_wall
                cpu = None if cpu_before is None else (
                    cpu + cpu_after - cpu_before)
                if args.runs > 1:
                    median = statistics.median(r['cycle']
                                               for r in run_results)
                    print(f"  run {run + 1}: median cycle {median:.2f}"
                          f" ms, {len(run_results) / run_wall:.1f} cycles/s"
                          f" (load {os.getloadavg()[0]:.2f})")
            runs = f", {args.runs} runs pooled" if args.runs > 1 else ""
            report(f"{args.db}, concurrency {concurrency}{runs}", results,
                   wall, cpu)
            # NOTE(bench): this VM's speed drifts from minute to minute;
            # cycles and floors in alternating blocks see the same drift.
            cycles, floors = [], []
            for _ in range(max(1, args.cycles // BLOCK)):
                cycles += cycler.run(BLOCK, concurrency)[0]
                floors += cycler.run(BLOCK, concurrency,
                                     step=cycler.floor)[0]
            cycle_ms = statistics.median(r["cycle"] for r in cycles)
            floor_ms = statistics.median(r["floor"] for r in floors)
            print(f"  {len(cycles)} more cycles and {len(floors)} floors "
                  f"(3 x GET /v2, same server) in alternating blocks of "
                  f"{BLOCK}: cycle {cycle_ms:.2f} ms, floor {floor_ms:.2f} "
                  f"ms; cycle / floor = {cycle_ms / floor_ms:.2f}")
        if nova:
            events = nova.settle(quiet=0.5, timeout=60)
            print(f"\nNova stand-in received {len(events)} events "
                  f"({sum(e['status'] == 'completed' for e in events)} "
                  f"completed)")
        print(f"load average after the runs: "
              f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
