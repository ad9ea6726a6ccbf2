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

"""The RPC endpoint: routing to drivers, programming, errors."""

import threading
import time

import pytest

from cyborg_lite.agent import exception
from cyborg_lite.agent import manager
from cyborg_lite.agent.drivers import base
from cyborg_lite.agent.drivers import sim
from cyborg_lite.agent.drivers import xilinx_xrt
from tests.unit.cyborg_lite.agent.test_images import write_catalog

FPGA = "0000:5e:00.0"


@pytest.fixture
def agent(sim_conf, tmp_path):
    write_catalog(tmp_path / "catalog", [
        ("img-nlb0", "nlb0", b"nlb0", None),
        ("img-nlb3", "nlb3", b"nlb3", None),
        ("img-bad", "bad", b"tampered", "0" * 64),
    ])
    return manager.AgentManager(sim_conf)


def test_discover_reports_devices_with_their_driver(agent):
    result = agent.discover({})

    assert result["host"] == "agent-test-host"
    assert [d["driver"] for d in result["devices"]] == ["sim", "sim"]
    assert result["devices"][0]["pci_address"] == FPGA


def test_program_region_by_function_confirms_the_function(agent):
    result = agent.program_region({}, pci_address=FPGA, region_id="0",
                                  function_id="nlb0")

    assert result["function_id"] == "nlb0"
    assert result["image"]["id"] == "img-nlb0"
    assert result["image"]["checksum"].startswith("sha256:")
    assert agent.current_function({}, pci_address=FPGA, region_id="0")[
        "function_id"] == "nlb0"


def test_a_region_whose_image_is_being_fetched_reads_programming(agent):
    # NOTE(tests): what program_region holds while it fetches the image,
    # before the driver touches the device.
    region = base.Region(FPGA, "0")
    agent._claim(region)
    try:
        reading = agent.current_function({}, pci_address=FPGA,
                                         region_id="0")
    finally:
        agent._release(region)

    assert (reading["state"], reading["function_id"]) == (
        "programming", None)
    assert agent.current_function({}, pci_address=FPGA, region_id="0")[
        "state"] == "ready"


def test_program_region_by_bitstream_id(agent):
    result = agent.program_region({}, pci_address=FPGA.upper(),
                                  region_id="1", bitstream_id="img-nlb3")

    assert (result["pci_address"], result["function_id"]) == (FPGA, "nlb3")


def test_checksum_mismatch_programs_nothing(agent, sim_conf):
    agent.program_region({}, pci_address=FPGA, region_id="0",
                         function_id="nlb0")

    with pytest.raises(exception.ChecksumMismatch):
        agent.program_region({}, pci_address=FPGA, region_id="0",
                             bitstream_id="img-bad")

    state = sim.read_state(sim_conf.agent.sim_state_dir)[FPGA]
    assert state["regions"][0]["function_id"] == "nlb0"
    assert state["regions"][0]["state"] == "ready"


def test_driver_failure_comes_back_as_programming_failed(agent, sim_conf):
    sim_conf.set_override("sim_fail_program", True, group="agent")

    with pytest.raises(exception.ProgrammingFailed, match="region 0 of "
                       "device 0000:5e:00.0 failed"):
        agent.program_region({}, pci_address=FPGA, region_id="0",
                             function_id="nlb0")
    assert agent.current_function({}, pci_address=FPGA, region_id="0")[
        "state"] == "error"


def test_second_programming_of_a_busy_region_is_refused(agent, sim_conf):
    sim_conf.set_override("sim_program_seconds", 0.5, group="agent")
    worker = threading.Thread(target=agent.program_region, args=({},),
                              kwargs={"pci_address": FPGA, "region_id": "0",
                                      "function_id": "nlb0"})
    worker.start()
    try:
        deadline = time.monotonic() + 5
        while agent.current_function({}, pci_address=FPGA, region_id="0")[
                "state"] != "programming":
            assert time.monotonic() < deadline
            time.sleep(0.01)
        with pytest.raises(exception.RegionBusy):
            agent.program_region({}, pci_address=FPGA, region_id="0",
                                 function_id="nlb3")
        # Another region of the same device is independent (dynamic).
        agent.program_region({}, pci_address=FPGA, region_id="1",
                             function_id="nlb3")
    finally:
        worker.join()
    assert agent.current_function({}, pci_address=FPGA, region_id="0")[
        "function_id"] == "nlb0"


class _LyingDriver(base.AcceleratorDriver):
    """Programs "successfully" but the device keeps the old function."""

    name = "lying"

    def discover(self):
        return [{"type": "FPGA", "vendor_id": "0x8086",
                 "product_id": "0x0b30", "pci_address": FPGA,
                 "program_mode": "dynamic", "regions": [
                     {"id": "0", "function_id": "old", "state": "ready",
                      "attach_handles": []}]}]

    def current_function(self, region):
        return base.reading("old")

    def program(self, region, image_path, function_id):
        pass


def test_function_read_back_must_match(sim_conf, tmp_path):
    write_catalog(tmp_path / "catalog", [("img-nlb0", "nlb0", b"x", None)])
    agent = manager.AgentManager(
        sim_conf, driver_map={"lying": _LyingDriver(sim_conf)})

    with pytest.raises(exception.ProgrammingFailed,
                       match="runs 'old' after programming, expected "
                             "'nlb0'"):
        agent.program_region({}, pci_address=FPGA, region_id="0",
                             function_id="nlb0")


def test_unknown_device_names_address_and_host(agent):
    with pytest.raises(exception.DeviceNotFound,
                       match="0000:01:00.0 on agent-test-host"):
        agent.current_function({}, pci_address="0000:01:00.0",
                               region_id="0")


def test_missing_arguments_are_invalid(agent):
    with pytest.raises(exception.InvalidRequest):
        agent.current_function({}, pci_address=FPGA, region_id=None)


def test_unexpected_driver_errors_are_wrapped(sim_conf):
    class Broken(_LyingDriver):
        def current_function(self, region):
            raise KeyError("afu")

    agent = manager.AgentManager(sim_conf,
                                 driver_map={"b": Broken(sim_conf)})
    with pytest.raises(exception.AgentError,
                       match="current_function on agent-test-host: "
                             "KeyError"):
        agent.current_function({}, pci_address=FPGA, region_id="0")


def test_reset_region_clears_error(agent, sim_conf):
    sim_conf.set_override("sim_fail_program", True, group="agent")
    with pytest.raises(exception.ProgrammingFailed):
        agent.program_region({}, pci_address=FPGA, region_id="0",
                             function_id="nlb0")

    reading = agent.reset_region({}, pci_address=FPGA, region_id="0")

    assert (reading["state"], reading["function_id"]) == ("ready", None)


def test_mdev_on_a_sim_device_is_not_supported(agent):
    with pytest.raises(exception.NotSupported,
                       match="sim cannot create mediated devices"):
        agent.create_mdev({}, pci_address=FPGA, mdev_type="t",
                          mdev_uuid="u")


def test_mdev_calls_reach_the_gpu_driver_by_parent_address(tmp_path):
    from cyborg_lite.agent.drivers import nvidia_mdev
    from tests.unit.cyborg_lite.agent.conftest import copy_sysfs
    from tests.unit.cyborg_lite.agent.conftest import make_conf

    root = copy_sysfs("sysfs_nvidia", tmp_path)
    conf = make_conf(sysfs_root=root, host="gpu-host")
    agent = manager.AgentManager(
        conf, driver_map={"nvidia_mdev": nvidia_mdev.NvidiaMdevDriver(conf)})
    mdev = "3f2a8e56-1c1e-4d5b-9a44-6f1b8f0e7c21"

    # 0000:41:00.4 is a VF: a handle of the A100 PF, not a device itself.
    created = agent.create_mdev({}, pci_address="0000:41:00.4",
                                mdev_type="nvidia-471", mdev_uuid=mdev)

    assert created == {"created": True, "host": "gpu-host",
                       "pci_address": "0000:41:00.4",
                       "mdev_type": "nvidia-471", "mdev_uuid": mdev}
    create = (tmp_path / "sysfs_nvidia" / "sys" / "class" / "mdev_bus" /
              "0000:41:00.4" / "mdev_supported_types" / "nvidia-471" /
              "create")
    assert create.read_text() == mdev
    assert agent.remove_mdev({}, pci_address="0000:41:00.4",
                             mdev_uuid=mdev)["removed"] is False


def test_driver_without_its_vendor_tool_leaves_the_others_discovering(
        sim_conf, tmp_path, caplog):
    sim_conf.set_override("xbmgmt_path", str(tmp_path / "no" / "xbmgmt"),
                          group="agent")
    agent = manager.AgentManager(sim_conf, driver_map={
        "xilinx_xrt": xilinx_xrt.XilinxXrtDriver(sim_conf),
        "sim": sim.SimDriver(sim_conf)})

    first = agent.discover({})
    again = agent.discover({})

    assert [d["driver"] for d in first["devices"]] == ["sim", "sim"]
    assert again == first
    warnings = [r.getMessage() for r in caplog.records
                if r.name == "cyborg_lite.agent.manager"]
    assert len(warnings) == 1
    assert warnings[0].startswith(
        "Driver xilinx_xrt discovers no device on agent-test-host: Vendor "
        f"tool {tmp_path / 'no' / 'xbmgmt'} is not installed")
    assert "remove xilinx_xrt from [agent] enabled_drivers" in warnings[0]
