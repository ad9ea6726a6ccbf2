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

"""``[agent]`` options and the oslo.messaging options they come with."""

import socket

from cyborg_lite.conf import agent as agent_conf
from tests.unit.cyborg_lite.agent.conftest import make_conf


def test_defaults():
    conf = make_conf()

    assert conf.agent.host == socket.getfqdn()
    # Safe by default: no simulated devices, no in-process transport
    # unless configured (the demo and tests configure them).
    assert conf.agent.enabled_drivers == []
    assert not conf.transport_url.startswith("fake:")
    assert conf.control_exchange == "cyborg_lite"
    # Bounded: an unreachable broker must not hang a bind.
    assert conf.agent.rpc_retry >= 0


def test_transport_url_is_oslo_messagings_own_option(tmp_path):
    config = tmp_path / "c.conf"
    config.write_text("[DEFAULT]\ntransport_url = rabbit://u:p@mq:5672/\n"
                      "[agent]\nhost = compute-1.example.org\n")
    conf = make_conf()
    conf(["--config-file", str(config)])

    assert conf.transport_url == "rabbit://u:p@mq:5672/"
    assert conf.agent.host == "compute-1.example.org"


def test_list_opts_publishes_the_agent_and_pci_groups():
    groups = dict(agent_conf.list_opts())
    names = {opt.name for opt in groups["agent"]}

    assert set(groups) == {"agent", "pci"}
    assert {"host", "enabled_drivers", "rpc_timeout", "rpc_retry",
            "rpc_heartbeat_timeout", "sim_state_dir", "sim_program_seconds",
            "sim_fail_program", "image_catalog_dir"} <= names
    assert {opt.name for opt in groups["pci"]} == {
        "device_spec", "physical_device_mappings"}
    assert all(opt.help for opts in groups.values() for opt in opts)
