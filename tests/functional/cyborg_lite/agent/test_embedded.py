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

"""The embedded agent: API-side client and agent in one process over
oslo.messaging's in-process transport (no broker; configured, never a
default)."""

import uuid

import pytest

from cyborg_lite.agent import exception
from cyborg_lite.agent import rpcapi
from cyborg_lite.agent import service
from cyborg_lite.agent import transport
from tests.unit.cyborg_lite.agent.conftest import make_conf
from tests.unit.cyborg_lite.agent.test_images import write_catalog

FPGA = "0000:5e:00.0"


@pytest.fixture
def embedded(tmp_path):
    write_catalog(tmp_path / "catalog", [("img-nlb0", "nlb0", b"n", None),
                                         ("img-bad", "bad", b"x", "0" * 64)])
    conf = _in_process(make_conf(
        enabled_drivers=["sim"], sim_state_dir=str(tmp_path / "sim"),
        image_catalog_dir=str(tmp_path / "catalog"), sim_program_seconds=0,
        host=f"embedded-{uuid.uuid4().hex[:12]}"))
    agent = service.start_embedded(conf)
    yield conf, rpcapi.AgentAPI(conf)
    agent.stop()


def _in_process(conf):
    """``conf`` on the in-process transport (never a default)."""
    conf.set_override("transport_url", "fake://")
    return conf


def test_default_transport_is_a_broker():
    assert not transport.is_in_process(make_conf())


def test_in_process_transport_is_shared():
    conf = _in_process(make_conf())
    assert transport.is_in_process(conf)
    # API and agent must share one transport object to reach each other.
    assert transport.get_transport(conf) is transport.get_transport(
        _in_process(make_conf()))


def test_program_and_read_back_in_process(embedded):
    conf, api = embedded
    host = conf.agent.host

    devices = api.discover(host)["devices"]
    result = api.program_region(host, FPGA, "0", function_id="nlb0")
    reading = api.current_function(host, FPGA, "0")

    assert [d["pci_address"] for d in devices] == [FPGA, "0000:af:00.0"]
    assert result["function_id"] == "nlb0"
    assert (reading["state"], reading["function_id"]) == ("ready", "nlb0")


def test_agent_errors_arrive_as_their_class_with_a_clean_message(embedded):
    conf, api = embedded

    with pytest.raises(exception.ChecksumMismatch) as info:
        api.program_region(conf.agent.host, FPGA, "0",
                           bitstream_id="img-bad")

    assert type(info.value) is exception.ChecksumMismatch
    assert "Traceback" not in str(info.value)
    assert info.value.code == "agent.checksum_mismatch"


def test_call_to_a_host_without_agent_times_out(embedded):
    conf, api = embedded
    conf.set_override("rpc_timeout", 1, group="agent")

    with pytest.raises(exception.AgentTimeout,
                       match="host nowhere did not answer current_function "
                             "within 1 s"):
        api.current_function("nowhere", FPGA, "0")


def test_embedded_refuses_a_broker_transport():
    conf = make_conf()
    conf.set_override("transport_url", "rabbit://guest:guest@127.0.0.1:1/")
    with pytest.raises(ValueError, match="in-process transport"):
        service.start_embedded(conf)
