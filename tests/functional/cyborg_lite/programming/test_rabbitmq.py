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

"""Programming with API and agent as separate processes: gunicorn workers
over MariaDB, the agent (sim driver) as ``cyborg-lite-agent``, RPC over the
real RabbitMQ, Nova as a stand-in, Placement real."""

import concurrent.futures
import os
import signal
import threading
import time
import uuid

import pytest

from accel_common.placement import client as placement_client
from cyborg_lite.agent import rpcapi
from cyborg_lite.db import engine as db_engine
from cyborg_lite.inventory import apply as inventory_apply
from ironic_accel.placement import reporter
from tests.fixtures import nova_standin as nova_standin_mod
from tests.fixtures import placement as placement_fixture
from tests.fixtures import polling
from tests.fixtures import rabbitmq
from tests.fixtures.cyborg_server import CyborgServer
from tests.fixtures.cyborg_server import make_inventory
from tests.fixtures.cyborg_server import mariadb_database
from tests.functional.cyborg_lite.programming import env

pytestmark = [pytest.mark.rabbitmq, pytest.mark.mariadb]


class Host:
    """One compute host: its inventory and its agent process."""

    def __init__(self, tmp_path, url, program_seconds, regions=4):
        tmp_path.mkdir(parents=True, exist_ok=True)
        self.document = make_inventory(handles_per_region=(2,) * regions)
        self.name = self.document["host"]
        self.pci = self.document["devices"][0]["pci_address"]
        self.rps = [r["rp_uuid"]
                    for r in self.document["devices"][0]["regions"]]
        self.url = url
        self.exchange = rabbitmq.unique("exchange")
        self.state_dir = str(tmp_path / "sim")
        self.log = str(tmp_path / "agent.log")
        self.config = rabbitmq.write_agent_config(
            str(tmp_path / "agent.conf"), url, self.name, self.exchange,
            self.log, sim_state_dir=self.state_dir,
            sim_inventory_file=env.write_document(
                tmp_path / "inventory.json", self.document),
            image_catalog_dir=env.make_catalog(tmp_path / "catalog"),
            sim_program_seconds=program_seconds)
        self.api = rpcapi.AgentAPI(rabbitmq.client_conf(self.config))
        self.process = None

    def start(self):
        self.process = rabbitmq.AgentProcess(self.config, self.log).start()
        self.process.wait_ready(self.api, self.name)
        return self

    def sim(self, index=0):
        return env.sim_region(self.state_dir, self.pci, str(index))

    def server_options(self, placement_url=None):
        options = {
            "DEFAULT": {"transport_url": self.url,
                        "control_exchange": self.exchange},
            "oslo_messaging_rabbit": {"rabbit_retry_interval": 1,
                                      "rabbit_retry_backoff": 1},
            "agent": {"rpc_heartbeat_timeout": 2, "rpc_retry": 1,
                      "rpc_timeout": 5},
            "programming": {"heartbeat_interval": 0.5, "stale_after": 3,
                            "reconcile_interval": 1},
            "nova": {"notify_retry_interval": 0.1},
        }
        if placement_url:
            options["placement"] = {"auth_type": "admin_token",
                                    "endpoint": placement_url,
                                    "token": "admin"}
        return options

    def cleanup(self):
        # NOTE(programming): SIGKILL: a test agent has nothing to flush.
        if self.process:
            self.process.kill()
        self.api.transport.cleanup()
        rabbitmq.delete_exchange(self.url, self.exchange, self.name)


class Stack:
    """Agent process, gunicorn API over MariaDB, Nova stand-in, Placement:
    started once per module (each costs seconds); tests use their own
    regions and instances."""

    def __init__(self, directory, rabbitmq_url, placement_server):
        self.host = Host(directory / "host", rabbitmq_url, 3)
        self.placement = _report(placement_server, self.host.document)
        self.nova = nova_standin_mod.NovaStandin().start()
        self._database = mariadb_database(prefix="cyborg_prog")
        self.db_url = self._database.__enter__()
        self.server = CyborgServer(
            directory / "api", db_url=self.db_url,
            inventories=[self.host.document], workers=3,
            nova_url=self.nova.endpoint,
            options=self.host.server_options(placement_server.url))
        # NOTE(programming): schema and inventory in this process: two
        # cyborg-lite-manage runs would cost seconds each.
        self.server.write_config()
        db = db_engine.Database(self.db_url)
        db.sync()
        inventory_apply.apply_document(db, self.host.document)
        db.dispose()
        self.host.start()
        self.server.start()
        self.client = env.Client(self.server.url)

    def close(self):
        if self.server.process and self.server.process.poll() is None:
            os.killpg(self.server.process.pid, signal.SIGKILL)
            self.server.process.wait(10)
        self.host.cleanup()
        self.nova.stop()
        self._database.__exit__(None, None, None)


def _report(placement_server, document):
    conn = placement_server.connection()
    placement_fixture.create_compute_node(conn, name=document["host"])
    client = placement_client.Client(conn)
    reporter.report(client, document)
    return client


@pytest.fixture(scope="module")
def stack(tmp_path_factory, rabbitmq_url, placement_server):
    built = Stack(tmp_path_factory.mktemp("stack"), rabbitmq_url,
                  placement_server)
    yield built
    built.close()


def test_race_for_one_idle_region_has_one_winner(stack):
    host, client, nova = stack.host, stack.client, stack.nova
    functions = ("nlb0", "nlb3")
    # Two regions are raced for at once: 4 instances, 2 per region.
    contenders = []
    for rp in host.rps[:2]:
        for function in functions:
            (arq,) = client.arqs(client.profile(function))
            contenders.append((rp, function, arq, str(uuid.uuid4())))
    barrier = threading.Barrier(len(contenders))

    def bind(item):
        rp, function, arq, instance = item
        binder = env.Client(stack.server.url)
        barrier.wait(30)
        return item, binder.bind([arq], rp, instance, host.name)[0]

    with concurrent.futures.ThreadPoolExecutor(len(contenders)) as pool:
        results = list(pool.map(bind, contenders))

    for rp_index, rp in enumerate(host.rps[:2]):
        mine = [(item, status) for item, status in results if item[0] == rp]
        assert sorted(status for _, status in mine) == [202, 409], mine
        (winner,) = [item for item, status in mine if status == 202]
        (loser,) = [item for item, status in mine if status == 409]
        _, function, arq, instance = winner
        assert client.wait_resolved(arq)["state"] == "Bound"
        assert client.arq(loser[2])["state"] == "BindFailed"
        assert host.sim(rp_index)["function_id"] == function
        deployable = client.deployable(rp)
        assert deployable["bitstream_id"] == f"img-{function}"
        traits = stack.placement.traits(rp)[1]
        function_traits = {t for t in traits
                           if t.startswith("CUSTOM_FPGA_FUNCTION_ID_")}
        assert function_traits == {
            f"CUSTOM_FPGA_FUNCTION_ID_INTEL_{function.upper()}"}
        inventories = stack.placement.inventories(rp)[1]
        assert inventories["FPGA"]["reserved"] == 0
        events = nova.wait_for_events(1, server_uuid=instance)
        assert [e["status"] for e in events] == ["completed"]
        nova.settle()
        assert nova.events_for(loser[3]) == []  # its answer was the 409


def test_agent_killed_mid_programming_then_reconciled(stack):
    host, client, nova = stack.host, stack.client, stack.nova
    rp = host.rps[2]
    (arq,) = client.arqs(client.profile("nlb0"))
    instance = str(uuid.uuid4())

    assert client.bind([arq], rp, instance, host.name)[0] == 202
    polling.wait_for(lambda: host.sim(2)["state"] == "programming",
                 interval=0.02, what="the agent to start programming")
    host.process.kill()
    started = time.monotonic()

    assert client.wait_resolved(arq)["state"] == "BindFailed"
    assert time.monotonic() - started < 20
    events = nova.wait_for_events(1, server_uuid=instance)
    assert [e["status"] for e in events] == ["failed"]
    db = db_engine.Database(stack.db_url)
    try:
        region = env.region_row(db, rp)
        assert region.state == "error"
        assert "did not answer program_region" in region.last_error
        status, _ = client.bind(client.arqs(client.profile()), rp,
                                str(uuid.uuid4()), host.name)
        assert status == 409  # the region is in error, not reused

        # The restarted agent reads the interrupted run as error; the
        # periodic reconciler records its reading and keeps the region
        # out of use until an operator resets it.
        host.start()
        region = polling.wait_for(
            lambda: (lambda r: r if "interrupted" in (r.last_error or "")
                     else None)(env.region_row(db, rp)),
            what="the reconciler to read the restarted agent")
        assert region.state == "error"
        status, body = client.program(client.deployable(rp)["uuid"],
                                      op="remove")
        assert status == 200, body
        assert env.region_row(db, rp).state == "ready"
    finally:
        db.dispose()
