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

import copy
import email.utils
import time

import pytest
import sushy

from ironic_accel import exception as accel_exception
from ironic_accel.redfish import fields as redfish_fields
from ironic_accel.redfish import inventory as redfish_inventory
from ironic_accel.redfish import tasks as redfish_tasks
from ironic_accel.redfish import update as redfish_update
from tests.unit.ironic_accel import recorded_bmc as rbmc

FPGA = "/redfish/v1/Systems/1/Processors/FPGA0"
MONITOR = "/redfish/v1/TaskService/TaskMonitors/1"
TASKS = rbmc.load("tasks.json")


def _by_id(processors):
    return {p.identity: p for p in processors}


def test_get_accelerator_processors_reads_fpga_object(recorded_bmc):
    node = rbmc.node_for(recorded_bmc)
    procs = _by_id(redfish_inventory.get_accelerator_processors(node))
    assert set(procs) == {"FPGA0", "GPU0"}
    fpga = procs["FPGA0"]
    assert fpga.processor_type == sushy.PROCESSOR_TYPE_FPGA
    assert fpga.firmware_version == "2.0.1"
    assert fpga.fpga.fpga_type == redfish_fields.FpgaType.DISCRETE
    assert fpga.fpga.firmware_id == "PAC-A10-FIM"
    assert [s.slot_id for s in fpga.fpga.reconfiguration_slots] == ["0", "1"]
    assert fpga.slot_functions == {"0": None, "1": None}
    assert fpga.pcie_device_uri == "/redfish/v1/Chassis/1/PCIeDevices/FPGA0"
    assert procs["GPU0"].fpga is None


def test_slot_functions_read_back_when_programmed(recorded_bmc):
    recorded_bmc.documents.update(rbmc.load("bmc_fpga_programmed.json"))
    node = rbmc.node_for(recorded_bmc)
    fpga = _by_id(redfish_inventory.get_accelerator_processors(node))["FPGA0"]
    uuids = {slot: f.uuid for slot, f in fpga.slot_functions.items()}
    assert uuids == {"0": "3f3c1b2a-0000-4000-8000-00000000abcd",
                     "1": "3f3c1b2a-0000-4000-8000-00000000abcd"}


def test_sushy_client_is_reused_across_calls(recorded_bmc):
    node = rbmc.node_for(recorded_bmc)
    redfish_inventory.get_accelerator_processors(node)
    redfish_inventory.get_firmware_inventory(node)
    roots = [r for r in recorded_bmc.requests
             if r[:2] == ("GET", "/redfish/v1/")]
    assert len(roots) == 1


def test_503_is_retried_within_budget(recorded_bmc):
    node = rbmc.node_for(recorded_bmc)
    redfish_inventory.get_pcie_devices(node)  # connect first
    doc = recorded_bmc.documents["/redfish/v1/Systems/1"]
    recorded_bmc.answer("GET", "/redfish/v1/Systems/1",
                        (503, {}, None), (503, {}, None), (200, {}, doc))
    pcie = redfish_inventory.get_pcie_devices(node)
    assert len(pcie) == 2


def test_503_beyond_retry_budget_names_node(recorded_bmc):
    node = rbmc.node_for(recorded_bmc)
    redfish_inventory.get_pcie_devices(node)
    recorded_bmc.answer("GET", "/redfish/v1/Systems/1", (503, {}, None))
    with pytest.raises(accel_exception.BMCUnavailable) as err:
        redfish_inventory.get_accelerator_processors(node)
    assert node.uuid in str(err.value)
    assert "3 attempts" in str(err.value)


def test_connection_refused_is_bmc_unavailable(recorded_bmc):
    node = rbmc.node_for(recorded_bmc)
    recorded_bmc.stop()
    with pytest.raises(accel_exception.BMCUnavailable) as err:
        redfish_inventory.get_accelerator_processors(node)
    assert node.uuid in str(err.value)


def test_missing_resource_names_node(recorded_bmc):
    node = rbmc.node_for(recorded_bmc, system="/redfish/v1/Systems/9")
    with pytest.raises(accel_exception.AcceleratorBMCError) as err:
        redfish_inventory.get_accelerator_processors(node)
    assert not isinstance(err.value, accel_exception.BMCUnavailable)
    assert node.uuid in str(err.value)


def test_firmware_inventory_is_read_fresh(recorded_bmc):
    node = rbmc.node_for(recorded_bmc)
    versions = redfish_inventory.firmware_versions_by_processor(
        redfish_inventory.get_firmware_inventory(node))
    assert versions[FPGA] == (
        "/redfish/v1/UpdateService/FirmwareInventory/1-FPGA0", "2.0.1")
    member = "/redfish/v1/UpdateService/FirmwareInventory/1-FPGA0"
    recorded_bmc.documents[member] = dict(
        recorded_bmc.documents[member], Version="2.1.0")
    versions = redfish_inventory.firmware_versions_by_processor(
        redfish_inventory.get_firmware_inventory(node))
    assert versions[FPGA][1] == "2.1.0"


def test_simple_update_posts_image_and_target(recorded_bmc):
    node = rbmc.node_for(recorded_bmc)
    recorded_bmc.answer(
        "POST", "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate",
        (202, {"Location": MONITOR}, TASKS["running"]))
    target = "/redfish/v1/UpdateService/FirmwareInventory/1-FPGA0"
    monitor = redfish_update.simple_update(node, "fpga0", "http://img/fw.bin",
                                    target)
    # NOTE: sushy follows the Task's @odata.id; that URI answers 202 while
    # the task runs.
    assert monitor == "/redfish/v1/TaskService/Tasks/1"
    [(path, body)] = recorded_bmc.posts()
    assert body == {"ImageURI": "http://img/fw.bin",
                    "TransferProtocol": "HTTP", "Targets": [target]}


def test_simple_update_retries_503_then_fails_naming_device(recorded_bmc):
    node = rbmc.node_for(recorded_bmc)
    recorded_bmc.answer(
        "POST", "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate",
        (503, {}, None))
    with pytest.raises(accel_exception.BMCUnavailable) as err:
        redfish_update.simple_update(node, "fpga0", "https://img/fw.bin", FPGA)
    assert "fpga0" in str(err.value)
    assert len(recorded_bmc.posts()) == 3


def test_poll_task_running_with_digit_retry_after(recorded_bmc):
    node = rbmc.node_for(recorded_bmc)
    recorded_bmc.answer("GET", MONITOR,
                        (202, {"Retry-After": "3"}, TASKS["running"]))
    status = redfish_tasks.poll_task(node, "fpga0", MONITOR)
    assert status.running
    assert (status.state, status.percent, status.retry_after) == (
        "Running", 50, 3.0)
    assert "has started" in status.messages[0]


def test_poll_task_running_with_date_retry_after(recorded_bmc):
    node = rbmc.node_for(recorded_bmc)
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    recorded_bmc.answer("GET", MONITOR,
                        (202, {"Retry-After": when}, TASKS["running"]))
    status = redfish_tasks.poll_task(node, "fpga0", MONITOR)
    assert 20 < status.retry_after <= 30


def test_poll_task_completed(recorded_bmc):
    node = rbmc.node_for(recorded_bmc)
    recorded_bmc.answer("GET", MONITOR, (200, {}, TASKS["completed"]))
    status = redfish_tasks.poll_task(node, "fpga0", MONITOR)
    assert not status.running and status.succeeded
    assert status.percent == 100


def test_poll_task_202_without_body_then_task_uri_202_running(recorded_bmc):
    # A task URI that answers 202 while running: the state inside counts.
    node = rbmc.node_for(recorded_bmc)
    recorded_bmc.answer("GET", MONITOR, (202, {}, TASKS["running"]))
    status = redfish_tasks.poll_task(node, "fpga0", MONITOR)
    assert status.running and not status.succeeded


def test_poll_task_exception_is_not_success(recorded_bmc):
    node = rbmc.node_for(recorded_bmc)
    recorded_bmc.answer("GET", MONITOR, (200, {}, TASKS["exception"]))
    status = redfish_tasks.poll_task(node, "fpga0", MONITOR)
    assert not status.running and not status.succeeded
    assert status.state == "Exception"
    assert "flash write error" in status.messages[-1]


def test_completed_task_with_critical_status_is_not_success(recorded_bmc):
    node = rbmc.node_for(recorded_bmc)
    task = copy.deepcopy(TASKS["completed"])
    task["TaskStatus"] = "Critical"
    recorded_bmc.answer("GET", MONITOR, (200, {}, task))
    assert not redfish_tasks.poll_task(node, "fpga0", MONITOR).succeeded


def test_transfer_protocol_rejects_unknown_scheme():
    with pytest.raises(Exception) as err:
        redfish_update.transfer_protocol("gopher://x/fw.bin")
    assert "gopher" in str(err.value)


def test_one_client_serves_each_nodes_own_system(recorded_bmc):
    docs = recorded_bmc.documents
    docs["/redfish/v1/Systems/2"] = dict(
        docs["/redfish/v1/Systems/1"], Id="2",
        **{"@odata.id": "/redfish/v1/Systems/2",
           "Processors": {"@odata.id": "/redfish/v1/Systems/2/Processors"}})
    docs["/redfish/v1/Systems/2/Processors"] = dict(
        docs["/redfish/v1/Systems/1/Processors"], Members=[])
    first = rbmc.node_for(recorded_bmc)
    second = rbmc.node_for(recorded_bmc, system="/redfish/v1/Systems/2",
                           uuid="9a1f7ac4-5e0c-4a38-9d6e-6f3a2f3c1d2e")
    assert len(redfish_inventory.get_accelerator_processors(first)) == 2
    assert redfish_inventory.get_accelerator_processors(second) == []


def test_a_post_meeting_a_refused_connection_is_not_repeated(recorded_bmc):
    """The BMC may have acted on a POST whose answer got lost: it fails at
    once, naming the device, instead of being sent again."""
    node = rbmc.node_for(recorded_bmc)
    redfish_inventory.get_pcie_devices(node)  # a cached session
    recorded_bmc.stop()

    with pytest.raises(accel_exception.AcceleratorBMCError) as err:
        redfish_update.simple_update(node, "fpga0", "https://img/fw.bin",
                                     FPGA)
    assert not isinstance(err.value, accel_exception.BMCUnavailable)
    assert "fpga0" in str(err.value)
    assert "attempts" not in str(err.value)
