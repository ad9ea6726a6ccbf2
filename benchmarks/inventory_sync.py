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

"""Inventory sync benchmark: N Ironic nodes x 4 devices into cyborg_lite.

Starts a real Ironic (standalone, sqlite; accel_tools/embedded/ironic.py)
and a real Placement, and enrols N nodes, each with an inventory document
of 2 FPGAs and 2 GPUs (with their attach handles, as the Ironic reporter
writes them). Then, for each N in ``--nodes`` (nodes accumulate), runs
what the API's periodic sync runs (``cyborg_lite.inventory.ironic.sync``,
``[inventory] page_size`` nodes per Ironic request):

1. a full pass (every document applied; the first one creates the rows),
2. a changes-only pass in which nothing changed (target: no database
   write, no Placement request, Ironic read page by page),
3. a changes-only pass after 1% of the documents changed (target: costs
   in proportion),

and prints, per pass, the wall time, the Ironic requests, the database
statements that write, the Placement requests, the Python memory the pass
allocated at its peak (tracemalloc, for the pass where nothing changed,
measured on a second such pass since it slows what it watches) and the
process's resident memory after it. Not a test: figures only.

Example::

    .venv/bin/python benchmarks/inventory_sync.py --nodes 100 1000 5000
"""

import argparse
import concurrent.futures
import contextlib
import logging
import os
import sys
import tempfile
import time
import tracemalloc
import uuid

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

import sqlalchemy as sa  # noqa: E402

from accel_common.placement import client as placement_client  # noqa: E402
from accel_tools.embedded import ironic as ironic_launcher  # noqa: E402
from accel_tools.embedded import placement as placement_launcher  # noqa
from benchmarks import _common  # noqa: E402
from cyborg_lite.db import engine as db_engine  # noqa: E402
from cyborg_lite.inventory import ironic as ironic_inventory  # noqa: E402
from tests.functional import documents  # noqa: E402

FAKE_INTERFACES = {"boot_interface": "fake", "deploy_interface": "fake",
                   "power_interface": "fake", "management_interface": "fake",
                   "network_interface": "noop"}


class Counter:
    """Counts the requests a keystoneauth session sends."""

    def __init__(self, session):
        self.count = 0
        send = session.request

        def counted(*args, **kwargs):
            self.count += 1
            return send(*args, **kwargs)

        session.request = counted


class Writes:
    """Counts the statements that write, on a database engine."""

    def __init__(self, engine):
        self.count = 0
        sa.event.listen(engine, "before_cursor_execute", self._seen)

    def _seen(self, conn, cursor, statement, *args):
        if statement.lstrip().split(None, 1)[0].upper() in (
                "INSERT", "UPDATE", "DELETE", "REPLACE"):
            self.count += 1


def _rss_mib():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def enrol(baremetal, count, workers=4):
    """``count`` nodes with documents; returns ``[(node uuid, doc)]``."""
    def one(_):
        node_uuid = str(uuid.uuid4())
        host = f"bench-{node_uuid[:12]}.example.org"
        doc = documents.document(host, node_uuid)
        baremetal.create_node(uuid=node_uuid, name=host,
                              driver="fake-hardware",
                              extra={"accelerators": doc}, **FAKE_INTERFACES)
        return node_uuid, doc

    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        return list(pool.map(one, range(count)))


def one_pass(label, total, db, conn, placement, counters, full,
             page_size):
    ironic, writes = counters
    before = (ironic.count, writes.count, placement.reads,
              placement.writes)
    start = time.perf_counter()
    result = ironic_inventory.sync(db, conn, placement=placement, full=full,
                                   page_size=page_size)
    elapsed = time.perf_counter() - start
    spent = (ironic.count - before[0], writes.count - before[1],
             placement.reads - before[2], placement.writes - before[3])
    peak = 0
    if not full and not result["applied"]:
        # NOTE(bench): tracemalloc slows what it watches: the memory of a
        # pass where nothing changed is measured on a second such pass.
        tracemalloc.start()
        ironic_inventory.sync(db, conn, placement=placement, full=full,
                              page_size=page_size)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    memory = f"RSS {_rss_mib():4.0f} MiB"
    if peak:
        memory = f"pass peak {peak / 2**20:5.1f} MiB  " + memory
    print(f"N={total:5d}  {label:24s} {elapsed:7.2f} s  "
          f"applied {len(result['applied']):5d}  "
          f"Ironic {spent[0]:5d}  DB writes {spent[1]:6d}  "
          f"Placement {spent[2]:5d} GET {spent[3]:3d} other  {memory}",
          flush=True)
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+",
                        default=[100, 1000])
    parser.add_argument("--db", choices=["sqlite", "mariadb", "postgresql"],
                        default="sqlite")
    parser.add_argument("--page-size", type=int,
                        default=ironic_inventory.DEFAULT_PAGE_SIZE)
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    print("load average before: %.1f %.1f %.1f" % os.getloadavg())
    with contextlib.ExitStack() as stack:
        workdir = stack.enter_context(
            tempfile.TemporaryDirectory(prefix="sync-bench-"))
        placement_server = placement_launcher.PlacementServer(
            workdir).start()
        stack.callback(placement_server.stop)
        ironic_dir = os.path.join(workdir, "ironic")
        os.makedirs(ironic_dir)
        ironic = ironic_launcher.IronicServer(
            ironic_dir, placement_url=placement_server.url)
        ironic.start()
        stack.callback(ironic.stop)
        db = db_engine.Database(stack.enter_context(_common.database(
            args.db, "cyborg_sync_bench",
            sqlite_url=f"sqlite:///{workdir}/cyborg.sqlite")))
        db.sync()
        stack.callback(db.dispose)
        conn = ironic.connection()
        placement = placement_client.Client(placement_server.connection())
        counters = (Counter(conn.session), Writes(db.engine))
        print(f"Ironic and Placement on sqlite, cyborg_lite on {args.db}; "
              f"{args.page_size} nodes per Ironic request")
        nodes = []
        for total in args.nodes:
            start = time.perf_counter()
            nodes += enrol(conn.baremetal, total - len(nodes))
            print(f"N={total:5d}  enrolled in "
                  f"{time.perf_counter() - start:.0f} s", flush=True)
            one_pass("full pass", total, db, conn, placement, counters,
                     True, args.page_size)
            one_pass("changes only, no change", total, db, conn, placement,
                     counters, False, args.page_size)
            for node_uuid, doc in nodes[:max(1, total // 100)]:
                handles = doc["devices"][0]["regions"][0]["attach_handles"]
                if len(handles) > 2:
                    handles.pop()
                else:
                    handles.append({"type": "PCI",
                                    "pci_address": "0000:5e:01.7"})
                conn.baremetal.patch_node(node_uuid, [{
                    "op": "replace", "path": "/extra/accelerators",
                    "value": doc}])
            one_pass("changes only, 1% changed", total, db, conn,
                     placement, counters, False, args.page_size)


if __name__ == "__main__":
    main()
