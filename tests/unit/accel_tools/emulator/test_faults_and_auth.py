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


"""Fault injection, the request log, authentication and sessions."""

import requests
import sushy

from accel_tools.embedded.images import make_firmware_image

FPGA = "/redfish/v1/Systems/1/Processors/FPGA0"
AUTH = ("admin", "secret")
SIMPLE_UPDATE = "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate"


def _start_update(emulator, tmp_path, version="2.1.0"):
    path, _ = make_firmware_image(tmp_path, version)
    rsp = requests.post(emulator.url + SIMPLE_UPDATE, auth=AUTH,
                        json={"ImageURI": path.as_uri(), "Targets": [FPGA]})
    assert rsp.status_code == 202
    return emulator.url + rsp.headers["Location"]


def _put_faults(emulator, **faults):
    rsp = requests.put(emulator.url + "/emulator/faults", json=faults)
    assert rsp.status_code == 200, rsp.text
    return rsp.json()


def test_task_exception_fault_fails_the_task_and_keeps_the_version(emulator, clock, tmp_path):
    _put_faults(emulator, task_exception=True)
    monitor = _start_update(emulator, tmp_path)
    clock.advance(2)
    doc = requests.get(monitor, auth=AUTH).json()
    assert doc["TaskState"] == "Exception" and doc["TaskStatus"] == "Critical"
    assert any("task_exception" in m["Message"] for m in doc["Messages"])
    assert emulator.state.device("1", "FPGA0")["firmware_version"] == "2.0.1"
    # Once the fault is cleared the same update succeeds.
    _put_faults(emulator, task_exception=False)
    monitor = _start_update(emulator, tmp_path)
    clock.advance(2)
    assert requests.get(monitor, auth=AUTH).json()["TaskState"] == "Completed"
    assert emulator.state.device("1", "FPGA0")["firmware_version"] == "2.1.0"


def test_version_unchanged_fault_completes_without_changing_the_version(emulator, clock,
                                                                       tmp_path):
    _put_faults(emulator, version_unchanged=True)
    monitor = _start_update(emulator, tmp_path)
    clock.advance(2)
    assert requests.get(monitor, auth=AUTH).json()["TaskState"] == "Completed"
    inventory = requests.get(emulator.url + "/redfish/v1/UpdateService/FirmwareInventory/1-FPGA0",
                             auth=AUTH).json()
    assert inventory["Version"] == "2.0.1"


def test_unavailable_seconds_fault_answers_503_for_that_long(emulator, clock):
    faults = _put_faults(emulator, unavailable_seconds=5)
    assert faults["unavailable_seconds"] == 5
    for path in ("/redfish/v1/", "/redfish/v1/Systems/1"):
        rsp = requests.get(emulator.url + path, auth=AUTH)
        assert rsp.status_code == 503 and rsp.headers["Retry-After"]
        assert rsp.json()["error"]["@Message.ExtendedInfo"]
    # The control API stays reachable.
    assert requests.get(emulator.url + "/emulator/state").ok
    clock.advance(5)
    assert requests.get(emulator.url + "/redfish/v1/Systems/1", auth=AUTH).ok


def test_slow_task_progresses_over_task_seconds(emulator, clock, tmp_path):
    _put_faults(emulator, task_seconds=60)
    monitor = _start_update(emulator, tmp_path)
    clock.advance(30)
    doc = requests.get(monitor, auth=AUTH).json()
    assert doc["TaskState"] == "Running" and doc["PercentComplete"] == 50
    clock.advance(29)
    assert requests.get(monitor, auth=AUTH).status_code == 202
    clock.advance(1)
    assert requests.get(monitor, auth=AUTH).json()["TaskState"] == "Completed"


def test_bad_fault_documents_are_rejected(emulator):
    for body, word in (({"task_exception": "yes"}, "task_exception"),
                       ({"task_seconds": -1}, "task_seconds"),
                       ({"explode": True}, "explode")):
        rsp = requests.put(emulator.url + "/emulator/faults", json=body)
        assert rsp.status_code == 400 and word in rsp.json()["error"]


def test_request_log_records_modifying_requests(emulator, tmp_path):
    conn = emulator.sushy()
    conn.get_system("/redfish/v1/Systems/1").reset_system(sushy.ResetType.FORCE_OFF)
    _start_update(emulator, tmp_path)
    log = requests.get(emulator.url + "/emulator/requests").json()
    assert [(r["method"], r["path"]) for r in log] == [
        ("POST", "/redfish/v1/SessionService/Sessions"),
        ("POST", "/redfish/v1/Systems/1/Actions/ComputerSystem.Reset"),
        ("POST", SIMPLE_UPDATE)]
    assert log[0]["body"]["Password"] == "***"
    assert log[1]["body"] == {"ResetType": "ForceOff"}
    assert log[2]["body"]["Targets"] == [FPGA]
    assert requests.delete(emulator.url + "/emulator/requests").status_code == 204
    assert requests.get(emulator.url + "/emulator/requests").json() == []


def test_auth_required_except_root(emulator):
    assert requests.get(emulator.url + "/redfish/v1/").ok
    rsp = requests.get(emulator.url + "/redfish/v1/Systems")
    assert rsp.status_code == 401 and "Basic" in rsp.headers["WWW-Authenticate"]
    assert requests.get(emulator.url + "/redfish/v1/Systems", auth=("admin", "bad")
                        ).status_code == 401
    assert requests.get(emulator.url + "/redfish/v1/Systems", auth=AUTH).ok


def test_sessions_create_use_and_delete(emulator):
    rsp = requests.post(emulator.url + "/redfish/v1/SessionService/Sessions",
                        json={"UserName": "admin", "Password": "secret"})
    assert rsp.status_code == 201
    token, location = rsp.headers["X-Auth-Token"], rsp.headers["Location"]
    headers = {"X-Auth-Token": token}
    assert requests.get(emulator.url + "/redfish/v1/Systems", headers=headers).ok
    assert requests.delete(emulator.url + location, headers=headers).status_code == 204
    assert requests.get(emulator.url + "/redfish/v1/Systems",
                        headers=headers).status_code == 401
    rsp = requests.post(emulator.url + "/redfish/v1/SessionService/Sessions",
                        json={"UserName": "admin", "Password": "wrong"})
    assert rsp.status_code == 401


def test_sushy_uses_a_session_and_rejects_bad_credentials(emulator):
    conn = emulator.sushy()
    assert conn._auth.get_session_key()
    # sushy falls back to Basic auth when the session is refused; the
    # first real request then fails.
    auth = sushy.auth.BasicAuth("admin", "wrong")
    bad = sushy.Sushy(emulator.url + "/redfish/v1", auth=auth)
    try:
        bad.get_system("/redfish/v1/Systems/1")
    except sushy.exceptions.AccessError:
        pass
    else:
        raise AssertionError("wrong password accepted")


def test_no_credentials_configured_means_no_auth(start_emulator, tmp_path):
    emulator = start_emulator(state_file=tmp_path / "open.json", username=None, password=None)
    assert requests.get(emulator.url + "/redfish/v1/Systems/1").ok
