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

"""Boot storm: many instances with one ARQ each, from concurrent clients.

Starts cyborg_lite under gunicorn (``--workers``, default 4) on a database
of its own (``--db mariadb|postgresql|sqlite``), a Nova stand-in taking the
``accelerator-request-bound`` events, and, for the programming storm, one
``cyborg-lite-agent`` (sim driver, ``--program-seconds``, default 1) over
the real RabbitMQ. One host's FPGA offers enough regions.

Each instance does what Nova does: create the ARQ of its device profile,
bind it (Nova's PATCH, to the region the scheduler picked: round-robin over
the regions of its resource class, as Placement spreads them), then wait
until ``GET ?instance=&bind_state=resolved`` answers 200 (423 while a
region is being programmed). ``--clients`` (default 16) run the instances.

Two storms of ``--instances`` (default 500):

``plain``
    no profile asks for a function: every bind is instant;
``programming``
    a quarter of the profiles ask for a function no region runs yet, so
    each of those binds programs an idle region (``--program-seconds``).

Prints throughput, p50 and p99 per step and of the whole boot, the
slowest instance's wait, and checks, through the database and the Nova
stand-in: errors, attach handles held twice, ARQs left not Bound, events
missing or not ``completed``. Not a test: figures only.

Example::

    .venv/bin/python benchmarks/boot_storm.py --db mariadb
"""

import argparse
import collections
import concurrent.futures
import contextlib
import os
import pathlib
import statistics
import sys
import tempfile
import threading
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

import requests  # noqa: E402
import sqlalchemy as sa  # noqa: E402

from benchmarks import _common  # noqa: E402
from cyborg_lite.db import engine as db_engine  # noqa: E402
from cyborg_lite.db import models  # noqa: E402
from cyborg_lite.inventory import apply as inventory_apply  # noqa: E402
from tests.fixtures import cyborg_server  # noqa: E402
from tests.fixtures import nova_standin  # noqa: E402
from tests.fixtures import rabbitmq  # noqa: E402
from tests.functional.cyborg_lite.programming import env  # noqa: E402

STEPS = ("create", "bind", "resolve", "boot")
FUNCTIONS = ("nlb0", "nlb3")
#: attach handles per region of the instant storm's regions.
HANDLES_PER_REGION = 32


def inventory(instances, programmed):
    """One FPGA: regions of :data:`HANDLES_PER_REGION` handles for the
    instant binds, and one single-handle idle region per programmed
    instance (each one's first bind programs it)."""
    plain = instances - programmed
    regions = (HANDLES_PER_REGION,) * -(-plain // HANDLES_PER_REGION)
    doc = cyborg_server.make_inventory(
        handles_per_region=regions + (1,) * programmed)
    all_rps = [r["rp_uuid"] for r in doc["devices"][0]["regions"]]
    return doc, all_rps[:len(regions)], all_rps[len(regions):]


class Storm:
    """The instances of one storm and what each one saw."""

    def __init__(self, url, host, plans):
        self.url = url
        self.host = host
        self.plans = plans
        self.timings = []
        self.errors = []
        self.lock = threading.Lock()
        self.local = threading.local()

    def _client(self):
        if not hasattr(self.local, "client"):
            self.local.client = env.Client(self.url)
        return self.local.client

    def boot(self, plan):
        profile, rp = plan
        client = self._client()
        instance = str(uuid.uuid4())
        try:
            t0 = time.perf_counter()
            (arq,) = client.arqs(profile)
            t1 = time.perf_counter()
            status, body = client.bind([arq], rp, instance, self.host)
            if status != 202:
                raise RuntimeError(f"bind answered {status}: {body}")
            t2 = time.perf_counter()
            while True:
                status, body = client.call(
                    "GET", f"/v2/accelerator_requests?instance={instance}"
                    "&bind_state=resolved", env.NOVA)
                if status != 423:
                    break
                time.sleep(0.05)
            if status != 200 or [a["state"] for a in body["arqs"]] != [
                    "Bound"]:
                raise RuntimeError(f"resolve answered {status}: {body}")
            t3 = time.perf_counter()
        except (RuntimeError, AssertionError,
                requests.RequestException) as error:
            with self.lock:
                self.errors.append(f"{instance}: {error}")
            return
        with self.lock:
            self.timings.append({
                "instance": instance, "arq": arq,
                "programmed": plan in self.programmed_plans,
                "create": (t1 - t0) * 1000, "bind": (t2 - t1) * 1000,
                "resolve": (t3 - t2) * 1000, "boot": (t3 - t0) * 1000})

    def run(self, clients, programmed_plans=()):
        self.programmed_plans = set(programmed_plans)
        started = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(clients) as pool:
            list(pool.map(self.boot, self.plans))
        return time.perf_counter() - started


def plans(client, plain_rps, programmed_rps, instances, programmed):
    """``[(profile name, rp uuid)]`` in a shuffled but fixed order, and the
    programmed ones."""
    plain_profile = client.profile()
    function_profiles = [client.profile(f) for f in FUNCTIONS]
    plain = [(plain_profile, plain_rps[i % len(plain_rps)])
             for i in range(instances - programmed)]
    with_function = [(function_profiles[i % len(FUNCTIONS)], rp)
                     for i, rp in enumerate(programmed_rps[:programmed])]
    result, step = list(plain), max(1, len(plain) // max(1, programmed))
    for index, plan in enumerate(with_function):
        result.insert(min(len(result), index * (step + 1)), plan)
    return result, with_function


def check(db_url, storm, nova):
    """Problems the database and Nova show after a storm (lines)."""
    db = db_engine.Database(db_url)
    problems = []
    try:
        with db.transaction(read_only=True) as session:
            arqs = {row.uuid: row for row in session.scalars(
                sa.select(models.ARQ).where(models.ARQ.uuid.in_(
                    [t["arq"] for t in storm.timings])))}
            holders = collections.Counter(session.scalars(
                sa.select(models.AttachHandle.arq_id).where(
                    models.AttachHandle.arq_id.is_not(None))))
    finally:
        db.dispose()
    twice = [arq_id for arq_id, n in holders.items() if n > 1]
    if twice:
        problems.append(f"{len(twice)} ARQ(s) hold more than one handle")
    not_bound = [u for u, row in arqs.items() if row.state != "Bound"]
    if not_bound or len(arqs) != len(storm.timings):
        problems.append(f"{len(not_bound)} ARQ(s) not Bound, "
                        f"{len(storm.timings) - len(arqs)} missing")
    held = {row.id for row in arqs.values()}
    without = held - set(holders)
    if without:
        problems.append(f"{len(without)} Bound ARQ(s) hold no handle")
    events = nova.settle(quiet=1.0, timeout=120)
    by_tag = collections.defaultdict(list)
    for event in events:
        by_tag[event["tag"]].append(event["status"])
    missing = [t["arq"] for t in storm.timings if t["arq"] not in by_tag]
    extra = [tag for tag, seen in by_tag.items() if len(seen) > 1]
    failed = [tag for tag, seen in by_tag.items() if "completed" not in seen]
    for what, items in (("events missing", missing),
                        ("ARQs with more than one event", extra),
                        ("events not completed", failed)):
        if items:
            problems.append(f"{len(items)} {what}")
    return problems, len(events)


def report(label, storm, seconds, problems, events):
    done = len(storm.timings)
    print(f"\n{label}: {done} instances in {seconds:.1f} s = "
          f"{done / seconds:.1f} instances/s; {len(storm.errors)} errors; "
          f"{events} Nova events")
    print(f"  {'step':<10}{'p50 ms':>10}{'p99 ms':>10}{'max ms':>10}")
    for step in STEPS:
        values = [t[step] for t in storm.timings] or [0]
        print(f"  {step:<10}{statistics.median(values):>10.1f}"
              f"{_common.percentile(values, 0.99):>10.1f}{max(values):>10.1f}")
    programmed = [t["boot"] for t in storm.timings if t["programmed"]]
    if programmed:
        print(f"  instances that waited for programming: {len(programmed)};"
              f" p50 boot {statistics.median(programmed):.0f} ms, slowest "
              f"{max(programmed):.0f} ms")
    for error in storm.errors[:5]:
        print(f"  error: {error}")
    print("  checks: " + ("; ".join(problems) if problems else
                         "0 duplicate handles, 0 ARQs left unresolved, one "
                         "completed event per ARQ"))


def storm_once(args, programmed):
    """One storm on a fresh server; returns nothing, prints."""
    instances = args.instances
    doc, plain_rps, programmed_rps = inventory(instances, programmed)
    host = doc["host"]
    with contextlib.ExitStack() as stack:
        workdir = pathlib.Path(stack.enter_context(
            tempfile.TemporaryDirectory(prefix="boot-storm-")))
        nova = stack.enter_context(nova_standin.NovaStandinProcess())
        db_url = stack.enter_context(
            _common.database(args.db, "cyborg_storm"))
        options = {"nova": {"notify_retry_interval": 0.1}}
        if programmed:
            url = rabbitmq.broker_url()
            exchange = rabbitmq.unique("storm")
            log = str(workdir / "agent.log")
            config = rabbitmq.write_agent_config(
                str(workdir / "agent.conf"), url, host, exchange, log,
                sim_state_dir=str(workdir / "sim"),
                sim_inventory_file=env.write_document(
                    workdir / "inventory.json", doc),
                image_catalog_dir=env.make_catalog(workdir / "catalog"),
                sim_program_seconds=args.program_seconds)
            agent = rabbitmq.AgentProcess(config, log).start()
            stack.callback(rabbitmq.delete_exchange, url, exchange, host)
            stack.callback(agent.kill)
            options.update({
                "DEFAULT": {"transport_url": url,
                            "control_exchange": exchange},
                "agent": {"rpc_timeout": 30},
                "programming": {"reconcile_interval": 5}})
        server = cyborg_server.CyborgServer(
            workdir / "api", db_url=db_url, workers=args.workers,
            nova_url=nova.endpoint, options=options)
        (workdir / "api").mkdir(exist_ok=True)
        server.write_config()
        db = db_engine.Database(server.db_url)
        db.sync()
        inventory_apply.apply_document(db, doc)
        db.dispose()
        server.start()
        stack.callback(server.stop)
        client = env.Client(server.url)
        order, with_function = plans(client, plain_rps, programmed_rps,
                                     instances, programmed)
        storm = Storm(server.url, host, order)
        seconds = storm.run(args.clients, with_function)
        problems, events = check(server.db_url, storm, nova)
        label = (f"{args.db}, {args.workers} workers, {args.clients} "
                 f"clients, {instances} instances, "
                 + (f"{programmed} programmed ({args.program_seconds} s "
                    "each)" if programmed else "no programming"))
        report(label, storm, seconds, problems, events)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", choices=["mariadb", "postgresql", "sqlite"],
                        nargs="+", default=["mariadb", "postgresql"])
    parser.add_argument("--instances", type=int, default=500)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--program-seconds", type=float, default=1.0)
    parser.add_argument("--storm", choices=["plain", "programming"],
                        nargs="+", default=["plain", "programming"])
    args = parser.parse_args()
    print("load average before: %.1f %.1f %.1f" % os.getloadavg())
    for kind in args.db:
        for storm in args.storm:
            one = argparse.Namespace(**dict(vars(args), db=kind))
            storm_once(one, args.instances // 4 if storm == "programming"
                       else 0)
    print("load average after: %.1f %.1f %.1f" % os.getloadavg())


if __name__ == "__main__":
    main()
