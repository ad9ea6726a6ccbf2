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

"""The liveness the kubelet probes: grpc.health.v1.Health on a TCP port,
serving while the plugin's sockets answer, also while a claim's region is
programmed for longer than the kubelet's prepare call."""

import time

import grpc
from grpc_health.v1 import health_pb2
import pytest

from tests.functional.cyborg_lite_dra import env

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
REGION0 = "fpga-0000-0f-00-0-r0"


def test_the_plugin_answers_the_liveness_probe(plugin):
    assert plugin.health("liveness") == SERVING
    assert plugin.health("") == SERVING
    with pytest.raises(grpc.RpcError) as error:
        plugin.health("readiness")
    assert error.value.code() == grpc.StatusCode.NOT_FOUND


def test_a_plugin_whose_dra_socket_is_gone_is_not_serving(plugin):
    plugin.dra_socket.unlink()
    assert plugin.health() == NOT_SERVING
    assert "Health check: the plugin's sockets do not answer" in plugin.log()


def test_no_health_service_with_port_minus_one(plugin_factory):
    plugin = plugin_factory(**{"dra.healthcheck_port": -1}).start()
    assert "grpc.health.v1.Health" not in plugin.log_text()


def test_programming_longer_than_a_kubelet_call_keeps_the_plugin_live(
        slow_node, kube_apiserver):
    # The kubelet's prepare call gives up after 45 s; programming a region
    # may take minutes. The call is answered "still being prepared" after
    # [dra] prepare_wait, the bind goes on, the probe keeps answering
    # (the kubelet does not restart the plugin) and the kubelet's next call
    # gets the result.
    slow, plugin = slow_node(4)
    claim = env.allocate(kube_apiserver, plugin, REGION0,
                         slow.profile("nlb3"))
    uid = claim[1]
    error, _ = plugin.prepare([claim])[uid]
    assert "is still being prepared" in error

    started = time.monotonic()
    assert plugin.health() == SERVING
    assert time.monotonic() - started < 2
    assert slow.region(0)["function_id"] != "nlb3"

    def prepared():
        answer = plugin.prepare([claim])[uid]
        return answer[0] == "" and answer
    env.wait(prepared, "the prepared claim", timeout=30)
    assert slow.region(0)["function_id"] == "nlb3"
    assert plugin.health() == SERVING
