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

"""Placement reporter benchmark: N nodes x 2-4 devices into a real Placement.

Starts its own openstack-placement (tests/fixtures/placement.py: one
wsgiref thread, on sqlite or, with ``--placement-db mariadb``, on MariaDB)
and, for each N in ``--nodes``, reports N hosts with 2 to 4 devices each
(FPGAs and GPUs), sequentially through one client:

1. first report (creates 4 providers per host),
2. the same documents again (target: zero writes; the client's provider
   snapshots make it two reads per node),
3. the same again from a new client (a restarted conductor: no snapshots,
   so every provider's inventory and traits are read),
4. one device changed per host (one more attach handle; target: one write,
   that provider's inventory);
5. the conductor periodic (:func:`reporter.report_periodic`): a first
   pass, a pass where nothing changed (target: no request at all), and one
   where 1% of the nodes changed (requests for those only). With
   ``--periodic-only``, only these (the first pass then creates the
   providers).

Prints wall time per node, HTTP reads/writes per node and requests per
pass for each phase, the process's peak memory and the size of what the
periodic remembers per node.
Not a test: figures only.

Example::

    .venv/bin/python benchmarks/placement_report.py --nodes 10 50 200
"""

import argparse
import contextlib
import copy
import os
import pickle
import resource
import sys
import tempfile
import time
import types
import uuid

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

from accel_common.placement import client as placement_client  # noqa: E402
from ironic_accel.placement import reporter  # noqa: E402
from tests.fixtures import cyborg_server  # noqa: E402
from tests.fixtures import placement as fx  # noqa: E402
from tests.functional import documents  # noqa: E402


def _phase(client, docs):
    reads, writes = client.reads, client.writes
    start = time.perf_counter()
    for doc in docs:
        reporter.report(client, doc)
    elapsed = time.perf_counter() - start
    n = len(docs)
    return (elapsed * 1000 / n, (client.reads - reads) / n,
            (client.writes - writes) / n, elapsed)


def _periodic(client, docs):
    """One periodic pass (fingerprints: unchanged nodes cost nothing)."""
    reads, writes = client.reads, client.writes
    start = time.perf_counter()
    for doc in docs:
        node = types.SimpleNamespace(uuid=doc["node_uuid"])
        reporter.report_periodic(node, doc, client=client)
    elapsed = time.perf_counter() - start
    n = len(docs)
    return (elapsed * 1000 / n, (client.reads - reads) / n,
            (client.writes - writes) / n, elapsed)


def _document(host, index):
    """A node with 2 to 4 devices (FPGAs and GPUs), by its index."""
    node_uuid = str(uuid.uuid4())
    devices = [documents.fpga(node_uuid, 0), documents.gpu(node_uuid, 0),
               documents.fpga(node_uuid, 1), documents.gpu(node_uuid, 1)]
    return documents.document(host, node_uuid, devices[:2 + index % 3])


def run(server, count, periodic_only=False):
    conn = server.connection()
    client = placement_client.Client(conn)
    docs = []
    for index in range(count):
        _, host = fx.create_compute_node(conn)
        docs.append(_document(host, index))
    changed = copy.deepcopy(docs)
    for doc in changed:
        doc["devices"][0]["regions"][0]["attach_handles"].append(
            {"type": "PCI", "pci_address": "0000:5e:01.7"})
    rows = []
    if not periodic_only:
        rows = [("first report", _phase(client, docs)),
                ("no-change re-report", _phase(client, docs))]
        fresh = placement_client.Client(conn)
        rows.append(("no-change, new client", _phase(fresh, docs)))
        rows.append(("one device changed", _phase(fresh, changed)))
    reporter.forget_reports()
    periodic = placement_client.Client(conn)
    rows.append(("periodic, first pass", _periodic(periodic, changed)))
    rows.append(("periodic, no change", _periodic(periodic, changed)))
    one_percent = copy.deepcopy(changed)
    for doc in one_percent[:max(1, count // 100)]:
        doc["devices"][0]["regions"][0]["attach_handles"].pop()
    rows.append(("periodic, 1% changed", _periodic(periodic, one_percent)))
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    devices = sum(len(d["devices"]) for d in docs)
    for label, (ms, reads, writes, total) in rows:
        print(f"N={count:4d}  {label:21s}  {ms:7.1f} ms/node  "
              f"{reads:5.2f} reads/node  {writes:5.2f} writes/node  "
              f"requests {round((reads + writes) * count):6d}  "
              f"(total {total:7.2f} s)", flush=True)
    remembered = len(pickle.dumps(dict(reporter._REPORTED)))
    print(f"N={count:4d}  {devices} devices; reporter process max RSS "
          f"{rss:.0f} MiB; the periodic's memory of the nodes: "
          f"{remembered / 1024:.0f} KiB ({remembered / count:.0f} bytes "
          f"per node)", flush=True)
    conn.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+",
                        default=[10, 50, 200])
    parser.add_argument("--placement-db", choices=["sqlite", "mariadb"],
                        default="sqlite",
                        help="Placement's database (MariaDB: a database "
                        "made for the run on 127.0.0.1, dropped after)")
    parser.add_argument("--periodic-only", action="store_true",
                        help="only the conductor periodic's passes (the "
                        "first one creates the providers)")
    args = parser.parse_args()
    print("load average before: %.1f %.1f %.1f" % os.getloadavg())
    with contextlib.ExitStack() as stack:
        workdir = stack.enter_context(
            tempfile.TemporaryDirectory(prefix="placement-bench-"))
        connection = None
        if args.placement_db == "mariadb":
            connection = stack.enter_context(
                cyborg_server.mariadb_database("placement_bench"))
        server = fx.PlacementServer(workdir, connection=connection).start()
        stack.callback(server.stop)
        print(f"Placement (wsgiref, one thread) on {args.placement_db}; "
              "nodes with 2 to 4 devices")
        for count in args.nodes:
            run(server, count, periodic_only=args.periodic_only)


if __name__ == "__main__":
    main()
