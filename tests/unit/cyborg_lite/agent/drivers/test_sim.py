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

"""The sim driver: a simulated device kept in a state directory."""

import json
import os
import subprocess
import sys
import threading
import time

import pytest

from cyborg_lite.agent import exception
from cyborg_lite.agent.drivers import base
from cyborg_lite.agent.drivers import sim
from tests.fixtures import polling
from tests.unit.cyborg_lite.agent.conftest import make_conf

FPGA = "0000:5e:00.0"
REGION0 = base.Region(FPGA, "0")


def test_discover_mirrors_the_example_inventory_by_default(sim_conf):
    devices = sim.SimDriver(sim_conf).discover()

    assert [d["pci_address"] for d in devices] == [FPGA, "0000:af:00.0"]
    fpga = devices[0]
    assert fpga["program_mode"] == "dynamic"
    assert [r["id"] for r in fpga["regions"]] == ["0", "1"]
    assert fpga["regions"][0]["attach_handles"][0] == {
        "type": "PCI", "pci_address": "0000:5e:00.1"}
    assert fpga["regions"][0]["state"] == "ready"


def test_discover_uses_the_configured_inventory_file(tmp_path):
    with open(sim.default_inventory_file()) as handle:
        document = json.load(handle)
    document["devices"] = document["devices"][1:]
    path = tmp_path / "inv.json"
    path.write_text(json.dumps(document))
    conf = make_conf(sim_state_dir=str(tmp_path / "s"),
                     sim_inventory_file=str(path))

    devices = sim.SimDriver(conf).discover()

    assert [d["pci_address"] for d in devices] == ["0000:af:00.0"]


def test_invalid_inventory_file_names_the_bad_field(tmp_path):
    path = tmp_path / "inv.json"
    path.write_text(json.dumps({"schema_version": "1.0", "host": "h",
                                "devices": [{"id": "x"}]}))
    conf = make_conf(sim_state_dir=str(tmp_path / "s"),
                     sim_inventory_file=str(path))

    with pytest.raises(exception.AgentError, match=r"devices\[0\]"):
        sim.SimDriver(conf)


def test_program_sets_the_function_and_writes_state_atomically(sim_conf):
    driver = sim.SimDriver(sim_conf)

    driver.program(REGION0, "/images/nlb0.gbs", "f-nlb0")

    assert driver.current_function(REGION0) == base.reading("f-nlb0")
    state = sim.read_state(sim_conf.agent.sim_state_dir)[FPGA]
    assert state["regions"][0]["image"] == "nlb0.gbs"
    assert "programming" not in state["regions"][0]
    leftovers = [n for n in os.listdir(sim_conf.agent.sim_state_dir)
                 if n.startswith(".tmp-")]
    assert leftovers == []


def test_reading_during_programming_says_programming_not_a_function(
        sim_conf):
    sim_conf.set_override("sim_program_seconds", 0.5, group="agent")
    driver = sim.SimDriver(sim_conf)
    driver.program(REGION0, "/i/old.gbs", "old")
    worker = threading.Thread(target=driver.program,
                              args=(REGION0, "/i/new.gbs", "new"))
    worker.start()
    try:
        polling.wait_for(lambda: driver.current_function(REGION0)["state"]
                         == "programming", timeout=5, interval=0.01)
        assert driver.current_function(REGION0)["function_id"] is None
    finally:
        worker.join()
    assert driver.current_function(REGION0)["function_id"] == "new"


def test_program_time_is_configurable(sim_conf):
    sim_conf.set_override("sim_program_seconds", 0.3, group="agent")
    driver = sim.SimDriver(sim_conf)

    started = time.monotonic()
    driver.program(REGION0, "/i/a.gbs", "a")

    assert time.monotonic() - started >= 0.3


def test_fail_program_option_leaves_region_in_error(sim_conf):
    sim_conf.set_override("sim_fail_program", True, group="agent")
    driver = sim.SimDriver(sim_conf)

    with pytest.raises(exception.ProgrammingFailed,
                       match="sim_fail_program"):
        driver.program(REGION0, "/i/a.gbs", "a")

    reading = driver.current_function(REGION0)
    assert reading["state"] == "error"
    assert reading["function_id"] is None


def test_fault_file_fails_programming_with_its_message(sim_conf):
    driver = sim.SimDriver(sim_conf)
    fault = os.path.join(sim_conf.agent.sim_state_dir, sim.FAULT_FILE)
    with open(fault, "w") as handle:
        handle.write("bitstream CRC error at 0x40")

    with pytest.raises(exception.ProgrammingFailed,
                       match="CRC error at 0x40"):
        driver.program(REGION0, "/i/a.gbs", "a")

    os.unlink(fault)
    driver.program(REGION0, "/i/a.gbs", "a")
    assert driver.current_function(REGION0)["function_id"] == "a"


def test_marker_of_a_dead_process_reads_as_error_not_a_function(sim_conf):
    driver = sim.SimDriver(sim_conf)
    driver.program(REGION0, "/i/old.gbs", "old")
    dead = subprocess.run([sys.executable, "-c", "import os;"
                           "print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    state = sim.read_state(sim_conf.agent.sim_state_dir)[FPGA]
    state["regions"][0].update(
        state="programming", function_id=None,
        programming={"target_function_id": "new", "pid": int(dead.stdout),
                     "started_at": "2026-11-21T10:00:00+00:00"})
    sim.write_json_atomic(os.path.join(sim_conf.agent.sim_state_dir,
                                       "0000_5e_00.0.json"), state)

    # The same driver instance did not start that run: error.
    assert driver.current_function(REGION0)["state"] == "error"
    # A restarted agent persists the verdict and says why.
    reading = sim.SimDriver(sim_conf).current_function(REGION0)
    assert reading["state"] == "error"
    assert reading["function_id"] is None
    assert "'new'" in reading["detail"] and "interrupted" in reading["detail"]
    persisted = sim.read_state(sim_conf.agent.sim_state_dir)[FPGA]
    assert persisted["regions"][0]["state"] == "error"


def test_reset_clears_an_error(sim_conf):
    sim_conf.set_override("sim_fail_program", True, group="agent")
    driver = sim.SimDriver(sim_conf)
    with pytest.raises(exception.ProgrammingFailed):
        driver.program(REGION0, "/i/a.gbs", "a")

    driver.reset(REGION0)

    assert driver.current_function(REGION0) == base.reading(None)


def test_unknown_region_is_a_clear_error(sim_conf):
    driver = sim.SimDriver(sim_conf)

    with pytest.raises(exception.RegionNotFound, match="no region '7'"):
        driver.current_function(base.Region(FPGA, "7"))
    with pytest.raises(exception.RegionNotFound):
        driver.program(base.Region("0000:01:00.0", "0"), "/i/a", "a")


def test_state_survives_a_new_driver_instance(sim_conf):
    sim.SimDriver(sim_conf).program(REGION0, "/i/a.gbs", "a")

    assert sim.SimDriver(sim_conf).current_function(REGION0)[
        "function_id"] == "a"
