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

"""cyborg-lite-agent whose privsep daemon cannot start: the caller of the
agent's RPC reads that the helper did not start, with the helper command
and its error, not the sysfs file the call was about."""

import os

import pytest

from cyborg_lite.agent import exception
from cyborg_lite.agent import rpcapi
from tests.fixtures import rabbitmq
from tests.unit.cyborg_lite.agent.conftest import copy_sysfs

pytestmark = pytest.mark.rabbitmq

GPU = "0000:af:00.0"
VGPU = "8a4ed4b0-6a3e-4d37-93d5-7a3c1dd1f5b6"


def test_a_helper_command_naming_a_missing_binary_is_named(tmp_path,
                                                           rabbitmq_url):
    root = copy_sysfs("sysfs_nvidia", tmp_path)
    host = rabbitmq.unique("agent-host")
    exchange = rabbitmq.unique("exchange")
    config = str(tmp_path / "agent.conf")
    log = str(tmp_path / "agent.log")
    rabbitmq.write_agent_config(
        config, rabbitmq_url, host, exchange, log, debug=True,
        enabled_drivers="nvidia_mdev", sysfs_root=root,
        image_catalog_dir=str(tmp_path / "catalog"))
    helper = str(tmp_path / "no-such-dir" / "privsep-helper")
    with open(config, "a") as handle:
        handle.write(f"\n[cyborg_lite_agent_privileged]\n"
                     f"helper_command = {helper} --config-file {config}\n"
                     f"capabilities =\n")
    api = rpcapi.AgentAPI(rabbitmq.client_conf(config))
    process = rabbitmq.AgentProcess(config, log).start()
    try:
        process.wait_ready(api, host)

        with pytest.raises(exception.HelperNotStarted) as info:
            api.create_mdev(host, GPU, "nvidia-222", VGPU)
    finally:
        process.stop()
        api.transport.cleanup()
        rabbitmq.delete_exchange(rabbitmq_url, exchange, host)

    message = str(info.value)
    assert f"{helper} --config-file {config}" in message
    assert f"{helper}: No such file or directory" in message
    assert "/sys/" not in message
    with open(os.path.join(root, "sys", "class", "mdev_bus", GPU,
                           "mdev_supported_types", "nvidia-222",
                           "create")) as create:
        assert create.read() == ""
