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

"""cyborg-lite-agent with a real driver: what needs privilege runs in the
privsep daemon the agent starts with ``privsep-helper``, configured in
``[cyborg_lite_agent_privileged]`` as the playbook configures it (there
through sudo and oslo-rootwrap; here directly, keeping no capability, so
no test needs root). The driver works on a fake sysfs tree.
test_agent_unprivileged.py runs the agent as the role deploys it: as its
own user, the daemon through sudo, with the declared capabilities."""

import os
import sys

import pytest

from cyborg_lite.agent import exception
from cyborg_lite.agent import rpcapi
from tests.fixtures import rabbitmq
from tests.fixtures import unprivileged
from tests.unit.cyborg_lite.agent.conftest import copy_sysfs

pytestmark = pytest.mark.rabbitmq

GPU = "0000:af:00.0"
VGPU = "8a4ed4b0-6a3e-4d37-93d5-7a3c1dd1f5b6"
TYPES = os.path.join("sys", "class", "mdev_bus", GPU, "mdev_supported_types")


@pytest.fixture
def mdev_agent(tmp_path, rabbitmq_url):
    root = copy_sysfs("sysfs_nvidia", tmp_path)
    host = rabbitmq.unique("agent-host")
    exchange = rabbitmq.unique("exchange")
    config = str(tmp_path / "agent.conf")
    log = str(tmp_path / "agent.log")
    rabbitmq.write_agent_config(
        config, rabbitmq_url, host, exchange, log, debug=True,
        enabled_drivers="nvidia_mdev", sysfs_root=root,
        image_catalog_dir=str(tmp_path / "catalog"))
    helper = os.path.join(os.path.dirname(sys.executable), "privsep-helper")
    with open(config, "a") as handle:
        handle.write(f"\n[cyborg_lite_agent_privileged]\n"
                     f"helper_command = {helper} --config-file {config}\n"
                     f"capabilities =\n")
    conf = rabbitmq.client_conf(config)
    api = rpcapi.AgentAPI(conf)
    process = rabbitmq.AgentProcess(config, log).start()
    process.wait_ready(api, host)
    yield api, host, root, process
    process.stop()
    api.transport.cleanup()
    rabbitmq.delete_exchange(rabbitmq_url, exchange, host)


def _privsep_daemons(config):
    """The processes running privsep-helper with the agent's config file
    (the helper daemonizes: they are not the agent's children)."""
    return unprivileged.processes(
        lambda argv: any(a.endswith("privsep-helper") for a in argv)
        and config in argv)


def test_mdev_writes_go_through_the_privsep_helper(mdev_agent):
    api, host, root, process = mdev_agent

    assert api.create_mdev(host, GPU, "nvidia-222", VGPU)["created"] is True

    with open(os.path.join(root, TYPES, "nvidia-222", "create")) as created:
        assert created.read() == VGPU
    log = process.log()
    assert "privsep daemon starting" in log
    assert "privsep process running with uid" in log
    [daemon] = _privsep_daemons(process.config_file)
    assert daemon != process.process.pid


def test_a_type_the_parent_does_not_list_never_crosses(mdev_agent):
    api, host, root, process = mdev_agent

    with pytest.raises(exception.MdevError, match="nvidia-999"):
        api.create_mdev(host, GPU, "nvidia-999", VGPU)

    assert not os.path.exists(os.path.join(root, TYPES, "nvidia-999"))
    assert "privsep daemon starting" not in process.log()
