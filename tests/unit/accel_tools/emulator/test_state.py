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


"""State persistence: restarts, the state file, concurrency, the CLI."""

import json
import threading

import pytest
import requests

from accel_tools.embedded.images import make_firmware_image
from accel_tools.emulator import app as emulator_app
from accel_tools.emulator import main
from accel_tools.emulator import state as st

FPGA = "/redfish/v1/Systems/1/Processors/FPGA0"
AUTH = ("admin", "secret")
SIMPLE_UPDATE = "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate"


def test_restart_mid_task_resumes_and_completes(start_emulator, clock, tmp_path):
    state_file = tmp_path / "bmc.json"
    first = start_emulator(state_file=state_file, clock=clock)
    path, _ = make_firmware_image(tmp_path, "2.1.0")
    rsp = requests.post(first.url + SIMPLE_UPDATE, auth=AUTH,
                        json={"ImageURI": path.as_uri(), "Targets": [FPGA]})
    location = rsp.headers["Location"]
    clock.advance(1)
    assert requests.get(first.url + location, auth=AUTH).json()["PercentComplete"] == 50
    first.stop()

    second = start_emulator(state_file=state_file, clock=clock)
    doc = requests.get(second.url + location, auth=AUTH).json()
    assert doc["TaskState"] == "Running" and doc["PercentComplete"] == 50
    clock.advance(1)
    doc = requests.get(second.url + location, auth=AUTH).json()
    assert doc["TaskState"] == "Completed"
    assert second.state.device("1", "FPGA0")["firmware_version"] == "2.1.0"


def test_task_finishing_while_the_bmc_was_down_is_completed_on_start(start_emulator, clock,
                                                                     tmp_path):
    state_file = tmp_path / "bmc.json"
    first = start_emulator(state_file=state_file, clock=clock)
    path, _ = make_firmware_image(tmp_path, "3.0.0")
    requests.post(first.url + SIMPLE_UPDATE, auth=AUTH,
                  json={"ImageURI": path.as_uri(), "Targets": [FPGA]})
    first.stop()
    clock.advance(10)
    second = start_emulator(state_file=state_file, clock=clock)
    inventory = requests.get(second.url + "/redfish/v1/UpdateService/FirmwareInventory/1-FPGA0",
                             auth=AUTH).json()
    assert inventory["Version"] == "3.0.0"


def test_state_file_is_json_and_keeps_faults_power_and_devices(start_emulator, clock, tmp_path):
    state_file = tmp_path / "bmc.json"
    first = start_emulator(state_file=state_file, clock=clock)
    first.state.set_faults({"task_exception": True, "task_seconds": 7})
    first.state.reset_system("1", "ForceOff")
    first.state.set_devices("1", [{"id": "CPU0", "type": "CPU"}])
    first.stop()
    doc = json.loads(state_file.read_text())
    assert doc["faults"]["task_exception"] is True
    second = start_emulator(state_file=state_file, clock=clock)
    assert second.state.faults()["task_seconds"] == 7
    assert second.state.system("1")["power_state"] == "Off"
    assert [d["id"] for d in second.state.system("1")["devices"]] == ["CPU0"]


def test_state_file_seeded_with_devices_and_more_systems(tmp_path):
    state_file = tmp_path / "seed.json"
    state_file.write_text(json.dumps({"systems": {"1": {"devices": [
        {"id": "GPU0", "type": "GPU", "vendor_id": "0x10DE", "device_id": "0x20b0",
         "pci_address": "0000:3b:00.0"}]}}}))
    state = st.State(state_file, systems=2)
    assert [d["id"] for d in state.system("1")["devices"]] == ["GPU0"]
    assert state.device("1", "GPU0")["vendor_id"] == "0x10de"
    assert [d["id"] for d in state.system("2")["devices"]] == ["CPU0", "FPGA0", "GPU0"]


@pytest.mark.parametrize("content, error", [
    ("{not json", "not valid JSON"),
    ('{"systems": {"1": {"devices": [{"id": "X", "type": "TPU"}]}}}', "type must be one of"),
    ('{"systems": {"1": {"devices": [{"id": "F", "type": "FPGA", "vendor_id": "0x8086", '
     '"device_id": "0x0b30", "pci_address": "5e:00.0"}]}}}', "pci_address"),
])
def test_invalid_state_file_is_a_clear_error(tmp_path, content, error):
    state_file = tmp_path / "bad.json"
    state_file.write_text(content)
    with pytest.raises(ValueError, match=error):
        emulator_app.create_app(state_file)
    assert main.main(["--state-file", str(state_file), "--port", "0"]) == 2


def test_concurrent_requests_keep_the_state_consistent(emulator, tmp_path):
    path, _ = make_firmware_image(tmp_path, "2.1.0")
    errors = []

    def worker(n):
        try:
            for _ in range(5):
                rsp = requests.post(emulator.url + SIMPLE_UPDATE, auth=AUTH,
                                    json={"ImageURI": path.as_uri(), "Targets": [FPGA]})
                assert rsp.status_code == 202
                assert requests.get(emulator.url + "/redfish/v1/Systems/1", auth=AUTH).ok
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    tasks = json.loads(emulator.state_file.read_text())["tasks"]
    assert sorted(tasks, key=int) == [str(n) for n in range(1, 31)]
    assert len(requests.get(emulator.url + "/emulator/requests").json()) == 30


def test_cli_rejects_username_without_password(tmp_path):
    with pytest.raises(SystemExit):
        main.parse_args(["--state-file", str(tmp_path / "s.json"), "--username", "u"])
    args = main.parse_args(["--state-file", "s.json", "--port", "8123", "--systems", "3"])
    assert (args.host, args.port, args.systems) == ("127.0.0.1", 8123, 3)
