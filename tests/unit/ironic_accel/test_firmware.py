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

"""Step logic of the accel-redfish firmware interface.

The BMC is the recorded one; the node is a stand-in holding just what the
steps read and write (driver_internal_info above all), so a test can look at
the state a conductor would persist. Real Ironic runs the same steps in
tests/functional/ironic_accel.
"""

import hashlib
import inspect
import json

from ironic.common import exception
from ironic.common import states
from ironic.conf import CONF
import pytest

from ironic_accel import discovery
from ironic_accel import exception as accel_exception
from ironic_accel import firmware
from ironic_accel.redfish import client as redfish_client
from tests.unit.ironic_accel import recorded_bmc as rbmc

SIMPLE_UPDATE = "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate"
TASK = "/redfish/v1/TaskService/Tasks/1"
FPGA_MEMBER = "/redfish/v1/UpdateService/FirmwareInventory/1-FPGA0"
GPU_MEMBER = "/redfish/v1/UpdateService/FirmwareInventory/1-GPU0"
TASKS = rbmc.load("tasks.json")
FUNCTION = "3f3c1b2a-0000-4000-8000-00000000abcd"


class Node:
    """What the steps use of an Ironic node."""

    def __init__(self, bmc, step="update_accelerator_firmware"):
        stand_in = rbmc.node_for(bmc)
        self.__dict__.update(vars(stand_in))
        self.driver_internal_info = {}
        self.clean_step = {"interface": "firmware", "step": step}
        self.service_step = self.deploy_step = None
        self.provision_state = states.CLEANING
        self.saves = 0

    def set_driver_internal_info(self, key, value):
        self.driver_internal_info[key] = value

    def del_driver_internal_info(self, key):
        self.driver_internal_info.pop(key, None)

    def save(self):
        # Persisted state is JSON: make sure it stays JSON.
        self.driver_internal_info = json.loads(
            json.dumps(self.driver_internal_info))
        self.saves += 1

    def touch_provisioning(self):
        pass


class Task:
    def __init__(self, node):
        self.node = node
        self.context = None

    def upgrade_lock(self, purpose=None):
        pass


@pytest.fixture
def steps(recorded_bmc, monkeypatch):
    """The interface, with the conductor hand-offs recorded."""
    interface = firmware.AccelRedfishFirmware()
    calls = {"errors": [], "resumed": 0, "refreshed": 0}
    monkeypatch.setattr(
        firmware, "report_step_error",
        lambda task, msg: calls["errors"].append(msg))

    def resume(task):
        calls["resumed"] += 1
    monkeypatch.setattr(firmware, "resume_step", resume)

    def refresh(task):
        calls["refreshed"] += 1
    monkeypatch.setattr(discovery, "refresh", refresh)
    interface.calls = calls
    return interface


def _image(bmc, name="fw.bin", **content):
    doc = dict({"ironic_accel_image": 1, "kind": "firmware",
                "device_type": "FPGA", "version": "2.1.0"}, **content)
    bmc.documents["/images/" + name] = doc
    digest = hashlib.sha256(json.dumps(doc).encode()).hexdigest()
    return bmc.url + "/images/" + name, "sha256:" + digest


def _settings(bmc, **kw):
    url, checksum = _image(bmc)
    return [dict({"accelerator": "fpga0", "url": url, "checksum": checksum,
                  "version": "2.1.0"}, **kw)]


def _accept_update(bmc):
    bmc.answer("POST", SIMPLE_UPDATE,
               (202, {"Location": "/redfish/v1/TaskService/TaskMonitors/1"},
                TASKS["running"]))


def _start(steps, bmc, settings=None):
    node = Node(bmc)
    task = Task(node)
    result = steps.update_accelerator_firmware(
        task, settings or _settings(bmc))
    node.save()
    node.provision_state = result or states.CLEANING
    return task, result


def _set_version(bmc, member, version):
    bmc.documents[member] = dict(bmc.documents[member], Version=version)


def test_steps_are_out_of_band_and_declared_where_documented():
    cls = firmware.AccelRedfishFirmware
    update = cls.update_accelerator_firmware
    program = cls.program_accelerator
    refresh = cls.refresh_accelerator_inventory
    assert update._is_clean_step and update._is_service_step
    assert not getattr(update, "_is_deploy_step", False)
    assert update._clean_step_requires_ramdisk is False
    assert update._clean_step_argsinfo is cls.UPDATE_ARGSINFO
    assert program._is_deploy_step and program._is_clean_step
    assert program._deploy_step_argsinfo is cls.PROGRAM_ARGSINFO
    assert refresh._is_verify_step and refresh._verify_step_priority > 0
    assert refresh._clean_step_requires_ramdisk is False


def test_bad_setting_fails_before_any_bmc_request(steps, recorded_bmc):
    with pytest.raises(exception.InvalidParameterValue) as err:
        _start(steps, recorded_bmc, [{"accelerator": "fpga0",
                                      "url": "http://x/fw.bin",
                                      "checksum": "nope"}])
    assert "settings[0].checksum" in str(err.value)
    assert not [r for r in recorded_bmc.requests
                if r[1].startswith("/redfish")]


def test_checksum_mismatch_fails_before_any_bmc_request(steps, recorded_bmc):
    settings = _settings(recorded_bmc, checksum="sha256:" + "1" * 64)
    with pytest.raises(exception.InvalidParameterValue) as err:
        _start(steps, recorded_bmc, settings)
    assert "fpga0" in str(err.value) and "1" * 64 in str(err.value)
    assert not [r for r in recorded_bmc.requests
                if r[1].startswith("/redfish")]


def test_device_already_at_version_is_skipped(steps, recorded_bmc):
    task, result = _start(steps, recorded_bmc,
                          _settings(recorded_bmc, version="2.0.1"))
    assert result is None
    assert recorded_bmc.posts() == []
    assert steps.calls["refreshed"] == 1
    assert firmware.STATE_KEY not in task.node.driver_internal_info


def test_unknown_accelerator_names_it(steps, recorded_bmc):
    with pytest.raises(exception.InvalidParameterValue) as err:
        _start(steps, recorded_bmc, _settings(recorded_bmc,
                                              accelerator="qat0"))
    assert "qat0" in str(err.value)
    assert recorded_bmc.posts() == []


def test_update_starts_on_inventory_member_and_waits(steps, recorded_bmc):
    _accept_update(recorded_bmc)
    task, result = _start(steps, recorded_bmc)

    assert result == states.CLEANWAIT
    [(path, body)] = recorded_bmc.posts()
    assert body["Targets"] == [FPGA_MEMBER]
    state = task.node.driver_internal_info[firmware.STATE_KEY]
    assert state["index"] == 0
    [item] = state["queue"]
    assert (item["device"], item["monitor"], item["before"]) == (
        "fpga0", TASK, "2.0.1")


def test_poll_records_progress_while_running(steps, recorded_bmc):
    _accept_update(recorded_bmc)
    task, _ = _start(steps, recorded_bmc)
    recorded_bmc.answer("GET", TASK, (202, {"Retry-After": "1"},
                                      TASKS["running"]))
    steps._poll(task)

    progress = task.node.driver_internal_info[firmware.PROGRESS_KEY]["fpga0"]
    assert (progress["state"], progress["percent"]) == ("Running", 50)
    assert "50 percent" in progress["messages"][-1]
    assert steps.calls == {"errors": [], "resumed": 0, "refreshed": 0}


def test_poll_completion_confirms_version_then_resumes(steps, recorded_bmc):
    _accept_update(recorded_bmc)
    task, _ = _start(steps, recorded_bmc)
    recorded_bmc.answer("GET", TASK, (200, {}, TASKS["completed"]))
    _set_version(recorded_bmc, FPGA_MEMBER, "2.1.0")

    steps._poll(task)

    info = task.node.driver_internal_info
    assert firmware.STATE_KEY not in info
    assert info[firmware.PROGRESS_KEY]["fpga0"]["state"] == "Confirmed"
    assert (steps.calls["refreshed"], steps.calls["resumed"]) == (1, 1)


def test_poll_version_unchanged_fails_naming_device(steps, recorded_bmc):
    _accept_update(recorded_bmc)
    task, _ = _start(steps, recorded_bmc)
    recorded_bmc.answer("GET", TASK, (200, {}, TASKS["completed"]))

    with pytest.raises(accel_exception.AcceleratorBMCError) as err:
        steps._poll(task)
    assert "fpga0" in str(err.value) and "still '2.0.1'" in str(err.value)
    assert steps.calls["resumed"] == 0


def test_task_exception_fails_step_with_bmc_message(steps, recorded_bmc):
    _accept_update(recorded_bmc)
    task, _ = _start(steps, recorded_bmc)
    recorded_bmc.answer("GET", TASK, (200, {}, TASKS["exception"]))
    task.node.provision_state = states.CLEANWAIT
    task.node.save()

    # The periodic's body for one node, as the conductor calls it.
    poll_one = inspect.unwrap(firmware.AccelRedfishFirmware
                              ._poll_accelerator_updates)
    poll_one(steps, task, None, None)

    [error] = steps.calls["errors"]
    assert task.node.uuid in error and "fpga0" in error
    assert "Exception" in error and "flash write error" in error
    info = task.node.driver_internal_info
    assert firmware.STATE_KEY not in info
    assert info[firmware.PROGRESS_KEY]["fpga0"]["state"] == "Failed"


def test_unreachable_bmc_waits_within_budget_then_fails(steps, recorded_bmc):
    _accept_update(recorded_bmc)
    task, _ = _start(steps, recorded_bmc)
    recorded_bmc.answer("GET", TASK, (503, {}, None))

    steps._poll(task)  # within the budget: keep waiting
    item = task.node.driver_internal_info[firmware.STATE_KEY]["queue"][0]
    assert item["unreachable_since"]

    CONF.set_override("bmc_unavailable_timeout", 0, group="ironic_accel")
    try:
        with pytest.raises(accel_exception.BMCUnavailable) as err:
            steps._poll(task)
    finally:
        CONF.clear_override("bmc_unavailable_timeout", group="ironic_accel")
    assert "fpga0" in str(err.value) and "no answer" in str(err.value)


def test_devices_are_updated_one_after_another(steps, recorded_bmc):
    _accept_update(recorded_bmc)
    url, checksum = _image(recorded_bmc, "gpu.bin", device_type="GPU",
                           version="96.00")
    settings = _settings(recorded_bmc) + [{
        "accelerator": "gpu0", "url": url, "checksum": checksum,
        "version": "96.00"}]
    task, _ = _start(steps, recorded_bmc, settings)
    assert len(recorded_bmc.posts()) == 1

    recorded_bmc.answer("GET", TASK, (200, {}, TASKS["completed"]))
    _set_version(recorded_bmc, FPGA_MEMBER, "2.1.0")
    steps._poll(task)  # fpga0 confirmed, gpu0 started

    posts = recorded_bmc.posts()
    assert [b["Targets"] for _p, b in posts] == [[FPGA_MEMBER], [GPU_MEMBER]]
    assert task.node.driver_internal_info[firmware.STATE_KEY]["index"] == 1
    assert steps.calls["resumed"] == 0

    _set_version(recorded_bmc, GPU_MEMBER, "96.00")
    steps._poll(task)
    assert steps.calls["resumed"] == 1


def test_polling_resumes_from_persisted_state_after_restart(
        steps, recorded_bmc, monkeypatch):
    _accept_update(recorded_bmc)
    task, _ = _start(steps, recorded_bmc)
    # A new conductor: new interface object, no cached BMC sessions, only
    # what driver_internal_info holds.
    redfish_client.clear_cache()
    fresh = firmware.AccelRedfishFirmware()
    resumed = []
    monkeypatch.setattr(firmware, "resume_step", resumed.append)
    recorded_bmc.answer("GET", TASK, (200, {}, TASKS["completed"]))
    _set_version(recorded_bmc, FPGA_MEMBER, "2.1.0")

    fresh._poll(task)

    assert resumed == [task]
    assert len(recorded_bmc.posts()) == 1


def test_program_is_skipped_when_function_already_runs(steps, recorded_bmc):
    recorded_bmc.documents.update(rbmc.load("bmc_fpga_programmed.json"))
    url, checksum = _image(recorded_bmc, "fn.bin", kind="function",
                           function_id=FUNCTION)
    node = Node(recorded_bmc, step="program_accelerator")
    result = steps.program_accelerator(Task(node), [{
        "accelerator": "fpga0", "url": url, "checksum": checksum,
        "function_id": FUNCTION}])
    assert result is None
    assert recorded_bmc.posts() == []


def test_program_confirms_function_read_back(steps, recorded_bmc):
    _accept_update(recorded_bmc)
    url, checksum = _image(recorded_bmc, "fn.bin", kind="function",
                           function_id=FUNCTION)
    node = Node(recorded_bmc, step="program_accelerator")
    task = Task(node)
    assert steps.program_accelerator(task, [{
        "accelerator": "fpga0", "url": url, "checksum": checksum,
        "function_id": FUNCTION}]) == states.CLEANWAIT
    recorded_bmc.answer("GET", TASK, (200, {}, TASKS["completed"]))

    with pytest.raises(accel_exception.AcceleratorBMCError) as err:
        steps._poll(task)  # the slots still run nothing
    assert "expected " + FUNCTION in str(err.value)

    recorded_bmc.documents.update(rbmc.load("bmc_fpga_programmed.json"))
    steps._poll(task)
    assert steps.calls["resumed"] == 1


def _complete(steps, bmc, task, version="2.1.0"):
    bmc.answer("GET", TASK, (200, {}, TASKS["completed"]))
    _set_version(bmc, FPGA_MEMBER, version)
    steps._poll(task)


def test_same_image_without_version_is_not_flashed_twice(steps,
                                                         recorded_bmc):
    settings = _settings(recorded_bmc)
    del settings[0]["version"]
    _accept_update(recorded_bmc)
    task, result = _start(steps, recorded_bmc, settings)
    assert result == states.CLEANWAIT
    _complete(steps, recorded_bmc, task)
    applied = task.node.driver_internal_info[firmware.APPLIED_KEY]["fpga0"]
    assert applied["version"] == "2.1.0"
    assert applied["checksum"] == settings[0]["checksum"].split(":")[1]
    posts = len(recorded_bmc.posts())

    # The same clean-steps file again: nothing reaches the BMC.
    task.node.provision_state = states.CLEANING
    assert steps.update_accelerator_firmware(task, settings) is None
    assert len(recorded_bmc.posts()) == posts
    assert steps.calls["errors"] == []


def test_same_image_is_flashed_again_when_device_changed_since(
        steps, recorded_bmc):
    settings = _settings(recorded_bmc)
    del settings[0]["version"]
    _accept_update(recorded_bmc)
    task, _ = _start(steps, recorded_bmc, settings)
    _complete(steps, recorded_bmc, task)
    # Someone flashed another image out of band since.
    _set_version(recorded_bmc, FPGA_MEMBER, "1.9.0")

    task.node.provision_state = states.CLEANING
    assert steps.update_accelerator_firmware(
        task, settings) == states.CLEANWAIT


def test_other_image_without_version_is_flashed(steps, recorded_bmc):
    settings = _settings(recorded_bmc)
    del settings[0]["version"]
    _accept_update(recorded_bmc)
    task, _ = _start(steps, recorded_bmc, settings)
    _complete(steps, recorded_bmc, task)

    url, checksum = _image(recorded_bmc, "fw2.bin", version="2.2.0")
    other = [{"accelerator": "fpga0", "url": url, "checksum": checksum}]
    task.node.provision_state = states.CLEANING
    assert steps.update_accelerator_firmware(
        task, other) == states.CLEANWAIT


def test_update_steps_are_abortable():
    for name in ("update_accelerator_firmware", "program_accelerator"):
        method = getattr(firmware.AccelRedfishFirmware, name)
        assert method._clean_step_abortable is True


@pytest.mark.parametrize("status, outcome", [
    (204, "BMC task cancelled"),
    (405, "does not allow cancelling"),
])
def test_aborted_update_cancels_bmc_task_and_stops(steps, recorded_bmc,
                                                   status, outcome):
    _accept_update(recorded_bmc)
    task, _ = _start(steps, recorded_bmc)
    monitor = task.node.driver_internal_info[firmware.STATE_KEY][
        "queue"][0]["monitor"]
    recorded_bmc.answer("DELETE", monitor, (status, {}, None))
    # What Ironic leaves after `baremetal node abort` in clean wait.
    task.node.provision_state = states.CLEANFAIL

    steps._abandon(task, task.node.driver_internal_info[firmware.STATE_KEY])

    info = task.node.driver_internal_info
    assert firmware.STATE_KEY not in info
    progress = info[firmware.PROGRESS_KEY]["fpga0"]
    assert progress["state"] == "Aborted"
    assert outcome in progress["messages"][-1]
    assert ("DELETE", monitor, None) in recorded_bmc.requests
    assert steps.calls["resumed"] == 0


def test_simple_update_gets_the_staged_checked_copy_not_the_origin(
        steps, recorded_bmc, staging_dirs):
    _accept_update(recorded_bmc)
    settings = _settings(recorded_bmc)
    task, _ = _start(steps, recorded_bmc, settings)

    [(_path, body)] = recorded_bmc.posts()
    assert body["ImageURI"] != settings[0]["url"]
    assert body["ImageURI"].startswith(CONF.deploy.http_url)
    staged = staging_dirs[1] / "firmware" / task.node.uuid
    [name] = [p.name for p in staged.iterdir()]
    assert body["ImageURI"].endswith("/" + name)
    digest = settings[0]["checksum"].split(":")[1]
    assert hashlib.sha256((staged / name).read_bytes()).hexdigest() == digest

    recorded_bmc.answer("GET", TASK, (200, {}, TASKS["completed"]))
    _set_version(recorded_bmc, FPGA_MEMBER, "2.1.0")
    steps._poll(task)
    assert not staged.exists()
    assert not (staging_dirs[0] / task.node.uuid).exists()


def test_next_device_fails_before_the_bmc_when_its_image_changed(
        steps, recorded_bmc, staging_dirs):
    _accept_update(recorded_bmc)
    url, checksum = _image(recorded_bmc, "gpu.bin", device_type="GPU",
                           version="96.00")
    settings = _settings(recorded_bmc) + [{
        "accelerator": "gpu0", "url": url, "checksum": checksum,
        "version": "96.00"}]
    task, _ = _start(steps, recorded_bmc, settings)
    # The kept copy is lost (another conductor took the node over) and
    # the origin now serves something else.
    for kept in (staging_dirs[0] / task.node.uuid).iterdir():
        kept.unlink()
    _image(recorded_bmc, "gpu.bin", device_type="GPU", version="66.6")

    recorded_bmc.answer("GET", TASK, (200, {}, TASKS["completed"]))
    _set_version(recorded_bmc, FPGA_MEMBER, "2.1.0")
    with pytest.raises(exception.InvalidParameterValue) as err:
        steps._poll(task)
    steps._fail(task, str(err.value))

    assert len(recorded_bmc.posts()) == 1
    [error] = steps.calls["errors"]
    assert "checksum mismatch" in error and "nothing was sent" in error
    assert firmware.STATE_KEY not in task.node.driver_internal_info
    assert not (staging_dirs[1] / "firmware" / task.node.uuid).exists()


def test_an_aborted_step_leaves_no_staged_image(steps, recorded_bmc,
                                                staging_dirs):
    _accept_update(recorded_bmc)
    task, _ = _start(steps, recorded_bmc)
    staged = staging_dirs[1] / "firmware" / task.node.uuid
    assert list(staged.iterdir())
    task.node.provision_state = states.CLEANFAIL

    steps._abandon(task, task.node.driver_internal_info[firmware.STATE_KEY])

    assert not staged.exists()
    assert not (staging_dirs[0] / task.node.uuid).exists()


def test_a_step_with_nothing_to_do_keeps_no_copy(steps, recorded_bmc,
                                                 staging_dirs):
    task, result = _start(steps, recorded_bmc,
                          _settings(recorded_bmc, version="2.0.1"))

    assert result is None
    assert not (staging_dirs[0] / task.node.uuid).exists()
