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


"""SimpleUpdate, the task monitor and the task, as sushy and Ironic use them."""

import json

import requests
import sushy

from accel_tools.embedded.images import make_firmware_image

FPGA = "/redfish/v1/Systems/1/Processors/FPGA0"
AUTH = ("admin", "secret")


def _inventory_version(conn, member):
    inventory = conn.get_update_service().firmware_inventory
    inventory.refresh()
    return inventory.get_member(
        "/redfish/v1/UpdateService/FirmwareInventory/" + member).version


def test_simple_update_runs_to_completion_with_sushy(start_emulator, tmp_path):
    emulator = start_emulator()
    emulator.state.set_faults({"task_seconds": 0.6})
    path, _ = make_firmware_image(tmp_path, "2.1.0")
    conn = emulator.sushy()
    monitor = conn.get_update_service().simple_update(path.as_uri(), targets=[FPGA])
    assert monitor.is_processing
    assert monitor.task.task_state == sushy.TaskState.RUNNING
    assert 0 < monitor.sleep_for <= 2
    monitor.wait(10)
    task = monitor.get_task()
    assert task.task_state == sushy.TaskState.COMPLETED
    assert task.task_status == sushy.Health.OK
    assert task.percent_complete == 100
    assert task.start_time and task.end_time
    text = [m.message for m in task.messages]
    assert any("2.1.0" in line for line in text)
    assert any("50 percent" in line for line in text)
    assert _inventory_version(conn, "1-FPGA0") == "2.1.0"
    fpga = conn.get_system("/redfish/v1/Systems/1").processors.get_member(FPGA)
    assert fpga.json["FPGA"]["FirmwareVersion"] == "2.1.0"


def test_task_monitor_answers_202_with_retry_after_then_the_task(emulator, clock, tmp_path):
    path, _ = make_firmware_image(tmp_path, "2.2.0")
    rsp = requests.post(emulator.url + "/redfish/v1/UpdateService/Actions/"
                        "UpdateService.SimpleUpdate", auth=AUTH,
                        json={"ImageURI": path.as_uri(), "TransferProtocol": "HTTP",
                              "Targets": ["/redfish/v1/UpdateService/FirmwareInventory/1-FPGA0"]})
    assert rsp.status_code == 202
    monitor = emulator.url + rsp.headers["Location"]
    task_uri = emulator.url + rsp.json()["@odata.id"]
    seen = []
    for _ in range(3):
        running = requests.get(monitor, auth=AUTH)
        assert running.status_code == 202 and running.headers["Retry-After"]
        assert requests.get(task_uri, auth=AUTH).status_code == 202
        assert running.json()["TaskState"] == "Running"
        seen.append(running.json()["PercentComplete"])
        clock.advance(0.5)
    # PercentComplete grows with time over task_seconds (default 2).
    assert seen == [0, 25, 50]
    clock.advance(1)
    done = requests.get(monitor, auth=AUTH)
    assert done.status_code == 200 and "Retry-After" not in done.headers
    assert done.json()["TaskState"] == "Completed"
    assert done.json()["PercentComplete"] == 100
    assert requests.get(task_uri, auth=AUTH).json() == done.json()
    assert emulator.state.device("1", "FPGA0")["firmware_version"] == "2.2.0"


def test_function_image_loads_every_slot(emulator, clock, tmp_path):
    path, _ = make_firmware_image(tmp_path, "1.0", kind="function",
                                  function_id="3e8f5a9c-0c6b-4c1b-9b4e-4c1f0a0c1d2e")
    conn = emulator.sushy()
    monitor = conn.get_update_service().simple_update(path.as_uri(), targets=[FPGA])
    clock.advance(3)
    assert not monitor.check_is_processing
    assert monitor.get_task().task_state == sushy.TaskState.COMPLETED
    fpga = emulator.sushy().get_system("/redfish/v1/Systems/1").processors.get_member(FPGA)
    slots = fpga.json["FPGA"]["ReconfigurationSlots"]
    assert len(slots) == 2
    for slot in slots:
        function = requests.get(emulator.url + slot["AccelerationFunction"]["@odata.id"],
                                auth=AUTH).json()
        assert function["UUID"] == "3e8f5a9c-0c6b-4c1b-9b4e-4c1f0a0c1d2e"
        assert function["FpgaReconfigurationSlots"] == [slot["UUID"]]
        assert function["@odata.type"].startswith("#AccelerationFunction.")
    functions = requests.get(emulator.url + FPGA + "/AccelerationFunctions", auth=AUTH).json()
    assert functions["Members@odata.count"] == 2
    # A function image leaves the firmware version alone.
    assert fpga.json["FirmwareVersion"] == "2.0.1"


def _simple_update(emulator, body):
    return requests.post(emulator.url + "/redfish/v1/UpdateService/Actions/"
                         "UpdateService.SimpleUpdate", auth=AUTH, json=body)


def test_unknown_target_is_400_with_extended_info(emulator):
    rsp = _simple_update(emulator, {"ImageURI": "http://127.0.0.1/x.img",
                                    "Targets": ["/redfish/v1/Systems/1/Processors/FPGA7"]})
    assert rsp.status_code == 400
    info = rsp.json()["error"]["@Message.ExtendedInfo"][0]
    assert info["MessageId"].endswith("ActionParameterValueNotInList")
    assert "FPGA7" in info["Message"]
    assert emulator.state.snapshot()["tasks"] == {}
    # sushy turns it into its BadRequestError.
    conn = emulator.sushy()
    try:
        conn.get_update_service().simple_update("http://127.0.0.1/x.img",
                                                targets=["/redfish/v1/Systems/1/Processors/CPU0"])
    except sushy.exceptions.BadRequestError as exc:
        assert "no updateable firmware" in str(exc)
    else:
        raise AssertionError("SimpleUpdate on a CPU was accepted")


def test_missing_image_uri_or_targets_is_400(emulator):
    rsp = _simple_update(emulator, {"Targets": [FPGA]})
    assert rsp.status_code == 400
    assert "ImageURI" in rsp.json()["error"]["message"]
    rsp = _simple_update(emulator, {"ImageURI": "http://127.0.0.1/x.img"})
    assert rsp.status_code == 400
    assert "Targets" in rsp.json()["error"]["message"]
    rsp = _simple_update(emulator, {"ImageURI": "gopher://x/y", "Targets": [FPGA]})
    assert rsp.status_code == 400
    assert "scheme" in rsp.json()["error"]["message"]


def test_image_served_over_http_is_downloaded_when_the_task_runs(emulator, clock, tmp_path,
                                                                 image_server):
    path, _ = make_firmware_image(tmp_path, "95.0", device_type="GPU")
    rsp = _simple_update(emulator, {"ImageURI": image_server.url_for(path),
                                    "Targets": ["/redfish/v1/Systems/1/Processors/GPU0"]})
    assert rsp.status_code == 202
    assert image_server.downloads == ["/" + path.name]
    clock.advance(2)
    assert emulator.state.task("1")["state"] == "Completed"
    assert emulator.state.device("1", "GPU0")["firmware_version"] == "95.0"


def test_undownloadable_or_wrong_image_ends_the_task_in_exception(emulator, tmp_path):
    missing = (tmp_path / "missing.img").as_uri()
    gpu_image, _ = make_firmware_image(tmp_path, "9.9", device_type="GPU")
    junk = tmp_path / "junk.img"
    junk.write_bytes(b"\x7fELF not an image")
    for uri, reason in ((missing, "cannot download"), (gpu_image.as_uri(), "device type GPU"),
                        (junk.as_uri(), "not an ironic-accel emulator image")):
        rsp = _simple_update(emulator, {"ImageURI": uri, "Targets": [FPGA]})
        task = requests.get(emulator.url + rsp.headers["Location"], auth=AUTH)
        assert task.status_code == 200
        doc = task.json()
        assert doc["TaskState"] == "Exception" and doc["TaskStatus"] == "Critical"
        assert any(reason in m["Message"] for m in doc["Messages"]), doc["Messages"]
    assert emulator.state.device("1", "FPGA0")["firmware_version"] == "2.0.1"


def test_task_payload_names_the_request(emulator, tmp_path):
    path, _ = make_firmware_image(tmp_path, "2.1.0")
    rsp = _simple_update(emulator, {"ImageURI": path.as_uri(), "Targets": [FPGA]})
    payload = rsp.json()["Payload"]
    assert json.loads(payload["JsonBody"]) == {"ImageURI": path.as_uri(), "Targets": [FPGA]}


def test_delete_on_the_task_monitor_cancels_a_running_update(emulator, clock, tmp_path):
    path, _ = make_firmware_image(tmp_path, "2.3.0")
    rsp = requests.post(emulator.url + "/redfish/v1/UpdateService/Actions/"
                        "UpdateService.SimpleUpdate", auth=AUTH,
                        json={"ImageURI": path.as_uri(), "TransferProtocol": "HTTP",
                              "Targets": ["/redfish/v1/UpdateService/FirmwareInventory/1-FPGA0"]})
    monitor = emulator.url + rsp.headers["Location"]
    clock.advance(0.5)

    assert requests.delete(monitor, auth=AUTH).status_code == 204
    task = requests.get(monitor, auth=AUTH)
    assert task.status_code == 200 and task.json()["TaskState"] == "Cancelled"
    clock.advance(5)
    assert emulator.state.device("1", "FPGA0")["firmware_version"] != "2.3.0"
    # An ended task can't be cancelled again.
    assert requests.delete(monitor, auth=AUTH).status_code == 409
