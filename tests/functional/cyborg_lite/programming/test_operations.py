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

"""What an operator of several hosts relies on (admin/operations.rst,
admin/high-availability.rst): JSON logs in which one boot is followed by
Nova's global request id from the API to the agent, RabbitMQ quorum queues,
an agent restarted while it programs, and API workers reloaded while
requests keep coming.

The deployment: gunicorn over MariaDB, ``cyborg-lite-agent`` (sim driver)
as its own process, RabbitMQ with quorum queues in a vhost of its own, the
real Placement, Nova as a stand-in.
"""

import json
import os
import pathlib
import re
import signal
import subprocess
import threading
import time
import uuid

import pytest
import requests

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

REQUEST_ID = re.compile(r"^req-[0-9a-f-]{36}$")

#: gunicorn reads ./gunicorn.conf.py: a worker that finds the marker file
#: when a PATCH comes SIGKILLs itself after that bind committed, before it
#: launches the programming run.
GUNICORN_HOOK = """
import os
import signal

MARKER = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                      "kill-before-launch")


def pre_request(worker, req):
    if req.method != "PATCH" or not os.path.exists(MARKER):
        return
    from cyborg_lite.programming import programmer

    launch = programmer.Programmer.launch

    def launch_or_die(self, jobs):
        try:
            os.unlink(MARKER)
        except FileNotFoundError:
            return launch(self, jobs)
        os.kill(os.getpid(), signal.SIGKILL)

    programmer.Programmer.launch = launch_or_die
"""

#: the options of admin/high-availability.rst, for the API and the agent.
QUORUM = {"rabbit_quorum_queue": "true", "rabbit_retry_interval": "1",
          "rabbit_retry_backoff": "1"}


def _rabbitmqctl(*argv):
    subprocess.run(["rabbitmqctl", *argv], check=True, capture_output=True,
                   timeout=120)


def _queue_types(vhost):
    listing = subprocess.run(
        ["rabbitmqctl", "list_queues", "-p", vhost, "--quiet",
         "--no-table-headers", "name", "type"],
        check=True, capture_output=True, text=True, timeout=120).stdout
    return dict(line.split("\t") for line in listing.splitlines() if line)


class Deployment:
    """The processes of one cloud region, started once for the module."""

    def __init__(self, directory, placement_server):
        self.vhost = rabbitmq.unique("cyborg-ops")
        _rabbitmqctl("add_vhost", self.vhost)
        _rabbitmqctl("set_permissions", "-p", self.vhost, "guest", ".*",
                     ".*", ".*")
        self.url = f"{rabbitmq.broker_url().rstrip('/')}/{self.vhost}"
        self.document = make_inventory(handles_per_region=(2,) * 4)
        self.host = self.document["host"]
        self.pci = self.document["devices"][0]["pci_address"]
        self.rps = [r["rp_uuid"]
                    for r in self.document["devices"][0]["regions"]]
        self.state_dir = str(directory / "sim")
        self.agent_log = directory / "agent.log"
        config = rabbitmq.write_agent_config(
            str(directory / "agent.conf"), self.url, self.host, "cyborg_lite",
            str(self.agent_log), debug=True, sim_state_dir=self.state_dir,
            sim_inventory_file=env.write_document(
                directory / "inventory.json", self.document),
            image_catalog_dir=env.make_catalog(directory / "catalog"),
            sim_program_seconds=2)
        text = pathlib.Path(config).read_text().replace(
            "[oslo_messaging_rabbit]\n", "[oslo_messaging_rabbit]\n"
            "rabbit_quorum_queue = true\n")
        pathlib.Path(config).write_text(text)
        self.agent = rabbitmq.AgentProcess(config, str(self.agent_log))
        self.agent_api = rpcapi.AgentAPI(rabbitmq.client_conf(config))
        conn = placement_server.connection()
        placement_fixture.create_compute_node(conn, name=self.host)
        reporter.report(placement_client.Client(conn), self.document)
        self.nova = nova_standin_mod.NovaStandin().start()
        self._database = mariadb_database(prefix="cyborg_ops")
        self.db_url = self._database.__enter__()
        self.api_log = directory / "api" / "api.log"
        self.server = CyborgServer(
            directory / "api", db_url=self.db_url,
            inventories=[self.document], workers=2,
            nova_url=self.nova.endpoint, options={
                "DEFAULT": {"transport_url": self.url,
                            "control_exchange": "cyborg_lite",
                            "debug": "true",
                            "use_json": "true",
                            "log_file": str(self.api_log)},
                "oslo_messaging_rabbit": QUORUM,
                "agent": {"rpc_heartbeat_timeout": 2, "rpc_retry": 1,
                          "rpc_timeout": 5},
                # NOTE(tests): agent_probe_interval: a restarted agent is
                # asked again soon after a bind found it silent.
                "programming": {"heartbeat_interval": 0.5,
                                "stale_after": 3, "reconcile_interval": 1,
                                "agent_probe_interval": 0.5},
                "nova": {"notify_retry_interval": 0.1},
                "placement": {"auth_type": "admin_token",
                              "endpoint": placement_server.url,
                              "token": "admin"}})
        self.server.write_config()
        (directory / "api" / "gunicorn.conf.py").write_text(GUNICORN_HOOK)
        self.kill_before_launch = directory / "api" / "kill-before-launch"
        db = db_engine.Database(self.db_url)
        db.sync()
        inventory_apply.apply_document(db, self.document)
        db.dispose()
        self.start_agent()
        self.server.start()
        self.client = env.Client(self.server.url)

    def start_agent(self):
        self.agent.start()
        self.agent.wait_ready(self.agent_api, self.host)

    def sim(self, index):
        return env.sim_region(self.state_dir, self.pci, str(index))

    def bind(self, rp_index, headers=None):
        """Nova's bind PATCH of a new ARQ asking for ``nlb0``, to region
        ``rp_index``; returns ``(response, arq uuid)``."""
        (arq,) = self.client.arqs(self.client.profile("nlb0"))
        body = {arq: [
            {"op": "add", "path": "/hostname", "value": self.host},
            {"op": "add", "path": "/device_rp_uuid",
             "value": self.rps[rp_index]},
            {"op": "add", "path": "/instance_uuid",
             "value": str(uuid.uuid4())}]}
        response = requests.patch(
            f"{self.server.url}/v2/accelerator_requests",
            headers=dict(env.NOVA, **(headers or {})), json=body,
            timeout=60)
        return response, arq

    def close(self):
        if self.server.process and self.server.process.poll() is None:
            os.killpg(self.server.process.pid, signal.SIGKILL)
            self.server.process.wait(10)
        self.agent.kill()
        self.agent_api.transport.cleanup()
        self.nova.stop()
        self._database.__exit__(None, None, None)
        _rabbitmqctl("delete_vhost", self.vhost)


@pytest.fixture(scope="module")
def cloud(tmp_path_factory, rabbitmq_url, placement_server):
    built = Deployment(tmp_path_factory.mktemp("ops"), placement_server)
    yield built
    built.close()


def test_programming_bind_over_quorum_queues(cloud):
    response, arq = cloud.bind(0)

    assert response.status_code == 202, response.text
    assert cloud.client.wait_resolved(arq)["state"] == "Bound"
    assert cloud.sim(0)["function_id"] == "nlb0"
    types = _queue_types(cloud.vhost)
    assert types["cyborg-lite-agent"] == "quorum", types
    assert types[f"cyborg-lite-agent.{cloud.host}"] == "quorum", types


def test_one_boot_followed_by_its_global_request_id(cloud):
    global_id = f"req-{uuid.uuid4()}"

    response, arq = cloud.bind(1, {"X-OpenStack-Request-ID": global_id})

    assert response.status_code == 202, response.text
    local_id = response.headers["x-openstack-request-id"]
    assert REQUEST_ID.match(local_id) and local_id != global_id
    assert cloud.client.wait_resolved(arq)["state"] == "Bound"
    records = [json.loads(line) for line in
               cloud.api_log.read_text().splitlines()]
    mine = [r for r in records
            if r["context"].get("global_request_id") == global_id]
    assert {r["context"]["request_id"] for r in mine} == {local_id}, \
        records[-20:]
    assert any(r["message"].startswith(
        '"PATCH /v2/accelerator_requests" status: 202') for r in mine)
    agent_lines = [line for line in cloud.agent_log.read_text().splitlines()
                   if global_id in line]
    assert any("find_image" in line and local_id in line
               for line in agent_lines), cloud.agent.log()
    # The programming run, in a thread of its own after the PATCH was
    # answered, and the agent's program_region carry the same ids (the
    # run logs its line just after the ARQ reads Bound).
    deadline = time.monotonic() + 15
    while not any(" now; bound " in json.loads(line)["message"]
                  and json.loads(line)["context"].get("request_id")
                  == local_id
                  for line in cloud.api_log.read_text().splitlines()):
        assert time.monotonic() < deadline, cloud.api_log.read_text()[-3000:]
        time.sleep(0.2)
    assert any("program_region" in line and local_id in line
               for line in agent_lines), cloud.agent.log()


def test_a_malformed_global_request_id_is_ignored(cloud):
    response = requests.get(
        f"{cloud.server.url}/v2/device_profiles",
        headers=dict(env.ADMIN, **{"X-OpenStack-Request-ID": "not-an-id"}),
        timeout=30)

    assert response.status_code == 200
    assert REQUEST_ID.match(response.headers["x-openstack-request-id"])
    assert "not-an-id" not in cloud.api_log.read_text()


def test_agent_stopped_mid_programming_finishes_the_run(cloud):
    response, arq = cloud.bind(2)
    assert response.status_code == 202, response.text
    polling.wait_for(lambda: cloud.sim(2)["state"] == "programming",
                     interval=0.02, what="the agent to start programming")

    cloud.agent.process.send_signal(signal.SIGTERM)

    assert cloud.agent.process.wait(15) == 0
    assert cloud.client.wait_resolved(arq)["state"] == "Bound"
    assert cloud.sim(2)["function_id"] == "nlb0"

    # While the agent is down, a bind is refused at once, in Nova's PATCH.
    response, arq = cloud.bind(3)
    assert response.status_code == 409, response.text
    assert "did not answer" in response.text
    _delete(cloud, arq)

    cloud.start_agent()
    arq = polling.wait_for(lambda: _bound_once_answered(cloud, 3),
                           interval=0.5, what="a bind to the restarted agent")
    assert cloud.client.wait_resolved(arq)["state"] == "Bound"


def _delete(cloud, arq):
    """Nova's answer to a refused bind: it fails the boot and deletes the
    boot's ARQs."""
    status, body = cloud.client.call(
        "DELETE", f"/v2/accelerator_requests?arqs={arq}", env.NOVA)
    assert status == 204, body


def _bound_once_answered(cloud, rp_index):
    """A bind's ARQ once one is accepted (202); a refused one (the agent
    not yet heard from again) is deleted as Nova would."""
    response, arq = cloud.bind(rp_index)
    if response.status_code == 202:
        return arq
    assert response.status_code == 409, response.text
    _delete(cloud, arq)
    return None


def _worker_pids(server):
    pids = set()
    access_log = server.workdir / "access.log"
    for line in access_log.read_text().splitlines():
        pids.add(line.split()[2])
    return pids


def test_api_reload_loses_no_request(cloud):
    errors, statuses = [], []
    stop = threading.Event()

    def traffic():
        session = requests.Session()
        while not stop.is_set():
            try:
                answer = session.get(
                    f"{cloud.server.url}/v2/device_profiles",
                    headers=env.ADMIN, timeout=30)
                statuses.append(answer.status_code)
            except requests.RequestException as exc:
                errors.append(exc)

    before = _worker_pids(cloud.server)
    threads = [threading.Thread(target=traffic) for _ in range(4)]
    for thread in threads:
        thread.start()
    try:
        for _ in range(2):
            served = len(statuses)
            os.kill(cloud.server.process.pid, signal.SIGHUP)
            polling.wait_for(lambda: len(statuses) > served + 50,
                             timeout=60, what="requests after the reload")
            time.sleep(1)
    finally:
        stop.set()
        for thread in threads:
            thread.join(60)

    assert errors == []
    assert set(statuses) == {200}
    assert _worker_pids(cloud.server) - before, "no worker was replaced"


def _programmings(cloud, region_id):
    return cloud.agent_log.read_text().count(
        f"Programming {cloud.pci} region {region_id} with image")


def _free(cloud, rp_index):
    """Delete the ARQs earlier tests bound to a region, as Nova would."""
    status, body = cloud.client.call("GET", "/v2/accelerator_requests",
                                     env.NOVA)
    assert status == 200, body
    for arq in body["arqs"]:
        if arq["device_rp_uuid"] == cloud.rps[rp_index]:
            _delete(cloud, arq["uuid"])


def test_worker_killed_between_commit_and_launch_binds(cloud):
    _free(cloud, 3)
    before = _programmings(cloud, 3)
    (arq,) = cloud.client.arqs(cloud.client.profile("nlb3"))
    body = {arq: [
        {"op": "add", "path": "/hostname", "value": cloud.host},
        {"op": "add", "path": "/device_rp_uuid", "value": cloud.rps[3]},
        {"op": "add", "path": "/instance_uuid",
         "value": str(uuid.uuid4())}]}
    cloud.kill_before_launch.write_text("")

    with pytest.raises(requests.ConnectionError):
        requests.patch(f"{cloud.server.url}/v2/accelerator_requests",
                       headers=env.NOVA, json=body, timeout=60)

    assert not cloud.kill_before_launch.exists()
    assert cloud.client.arq(arq)["state"] == "BindStarted"
    # Nova's retry is a repeat: nothing done, 202.
    response = requests.patch(f"{cloud.server.url}/v2/accelerator_requests",
                              headers=env.NOVA, json=body, timeout=60)
    assert response.status_code == 202, response.text
    # A surviving worker's reconciler takes the stale run over after
    # [programming] stale_after (3 s), finds the region never programmed
    # and starts the run: Bound, one programming on the agent.
    assert cloud.client.wait_resolved(arq, timeout=60)["state"] == "Bound"
    assert cloud.sim(3)["function_id"] == "nlb3"
    db = db_engine.Database(cloud.db_url)
    region = env.region_row(db, cloud.rps[3])
    db.dispose()
    assert (region.state, region.function_id, region.relaunches) == (
        "ready", "nlb3", 1)
    assert _programmings(cloud, 3) == before + 1, cloud.agent.log()
