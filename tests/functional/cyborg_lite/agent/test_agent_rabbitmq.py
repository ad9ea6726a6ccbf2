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

"""cyborg-lite-agent as its own process, reached over the real RabbitMQ."""

import os
import subprocess
import threading
import time

import pytest

from accel_tools.embedded import common as embedded_common
from cyborg_lite.agent import exception
from cyborg_lite.agent import rpcapi
from cyborg_lite.agent.drivers import sim
from tests.fixtures import rabbitmq
from tests.unit.cyborg_lite.agent.test_images import write_catalog

pytestmark = pytest.mark.rabbitmq

FPGA = "0000:5e:00.0"


class AgentEnv:
    """An agent process with its own host name, exchange and state."""

    def __init__(self, tmp_path, url, **agent_opts):
        self.host = rabbitmq.unique("agent-host")
        self.state_dir = str(tmp_path / "sim")
        write_catalog(tmp_path / "catalog", [
            ("img-nlb0", "nlb0", b"nlb0", None),
            ("img-nlb3", "nlb3", b"nlb3", None)])
        options = {"sim_state_dir": self.state_dir,
                   "image_catalog_dir": str(tmp_path / "catalog"),
                   "sim_program_seconds": 0}
        options.update(agent_opts)
        self.url = url
        self.exchange = rabbitmq.unique("exchange")
        self.config = rabbitmq.write_agent_config(
            str(tmp_path / "agent.conf"), url, self.host, self.exchange,
            str(tmp_path / "agent.log"), **options)
        self.log = str(tmp_path / "agent.log")
        self.conf = rabbitmq.client_conf(self.config,
                                         rpc_heartbeat_timeout=2)
        self.api = rpcapi.AgentAPI(self.conf)
        self.process = None

    def start(self):
        self.process = rabbitmq.AgentProcess(self.config, self.log).start()
        self.process.wait_ready(self.api, self.host)
        return self

    def cleanup(self):
        self.process.stop()
        self.api.transport.cleanup()
        rabbitmq.delete_exchange(self.url, self.exchange, self.host)

    def region_state(self, region_id="0"):
        device = sim.read_state(self.state_dir)[FPGA]
        return next(r for r in device["regions"] if r["id"] == region_id)


@pytest.fixture
def agent_env(tmp_path, rabbitmq_url):
    # NOTE(agent): programming (3 s) outlasts the heartbeat timeout (2 s):
    # a slow but live agent must not be taken for a dead one.
    env = AgentEnv(tmp_path, rabbitmq_url, sim_program_seconds=3)
    yield env.start()
    env.cleanup()


def test_discover_program_and_read_back(agent_env):
    api, host = agent_env.api, agent_env.host

    devices = api.discover(host)
    assert devices["host"] == host
    assert [d["pci_address"] for d in devices["devices"]] == [
        FPGA, "0000:af:00.0"]

    result = api.program_region(host, FPGA, "0", function_id="nlb0")
    assert (result["function_id"], result["image"]["id"]) == (
        "nlb0", "img-nlb0")
    assert result["seconds"] >= 3
    assert api.current_function(host, FPGA, "0")["function_id"] == "nlb0"
    assert agent_env.region_state()["function_id"] == "nlb0"

    reading = api.reset_region(host, FPGA, "0")
    assert (reading["state"], reading["function_id"]) == ("ready", None)


def test_agent_errors_cross_the_broker_as_clear_exceptions(agent_env):
    api, host = agent_env.api, agent_env.host

    with pytest.raises(exception.ImageNotFound) as info:
        api.program_region(host, FPGA, "0", function_id="unknown")
    assert str(info.value) == (
        "Image not found: no catalog image has accel:function_id=unknown")
    with pytest.raises(exception.DeviceNotFound, match=host):
        api.current_function(host, "0000:01:00.0", "0")
    with pytest.raises(exception.NotSupported):
        api.create_mdev(host, FPGA, "nvidia-222",
                        "8a4ed4b0-6a3e-4d37-93d5-7a3c1dd1f5b6")


def test_agent_killed_mid_programming(tmp_path, rabbitmq_url):
    env = AgentEnv(tmp_path, rabbitmq_url, sim_program_seconds=60)
    env.start()
    api, host = env.api, env.host

    def kill_when_programming():
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if env.region_state()["state"] == "programming":
                env.process.kill()
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_when_programming)
    killer.start()
    started = time.monotonic()
    try:
        with pytest.raises(exception.AgentTimeout,
                           match="did not answer program_region .* no "
                                 "heartbeat for 2 s"):
            api.program_region(host, FPGA, "0", function_id="nlb3",
                               timeout=120)
        elapsed = time.monotonic() - started
    finally:
        killer.join()
        env.process.stop()
    # Noticed by the missing heartbeat, far sooner than the timeout.
    assert elapsed < 20, elapsed
    marker = env.region_state()
    assert marker["state"] == "programming"
    assert marker["programming"]["target_function_id"] == "nlb3"

    # A restarted agent reads the interrupted run as error, not a function.
    env.start()
    try:
        reading = api.current_function(host, FPGA, "0")
        assert (reading["state"], reading["function_id"]) == ("error", None)
        assert "interrupted" in reading["detail"]
        assert api.reset_region(host, FPGA, "0")["state"] == "ready"
    finally:
        env.cleanup()


def test_unreachable_broker_fails_fast(tmp_path):
    url = f"rabbit://guest:guest@127.0.0.1:{embedded_common.free_port()}/"
    config = rabbitmq.write_agent_config(
        str(tmp_path / "client.conf"), url, "agent-host", "x",
        str(tmp_path / "log"), rpc_retry=1)
    api = rpcapi.AgentAPI(rabbitmq.client_conf(config))

    started = time.monotonic()
    with pytest.raises(exception.AgentUnreachable,
                       match="message broker unreachable after 2 attempts"):
        api.program_region("agent-host", FPGA, "0", function_id="nlb0")
    assert time.monotonic() - started < 15
    api.transport.cleanup()


def test_agent_process_refuses_the_in_process_transport(tmp_path):
    config = tmp_path / "agent.conf"
    config.write_text("[DEFAULT]\ntransport_url = fake://\n"
                      "[agent]\nhost = h1\n")

    result = subprocess.run(
        rabbitmq.agent_command() + ["--config-file", str(config)],
        capture_output=True, text=True, timeout=60,
        env=dict(os.environ, PYTHONWARNINGS="ignore"))

    assert result.returncode != 0
    assert "transport_url is the in-process transport" in result.stderr
