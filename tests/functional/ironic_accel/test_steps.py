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

"""The accel-redfish plugin in a real Ironic, against the BMC emulator.

Issue 3, tests 1-7: each test enrolls its own node on its own emulator; the
Ironic process is shared by the tests of one worker.
"""

import time
import uuid

from accel_common import inventory
from accel_tools.embedded import bmc as embedded_bmc
from accel_tools.embedded import images as embedded_images
from accel_tools.embedded import ironic as embedded_ironic

FPGA_URI = "/redfish/v1/Systems/1/Processors/FPGA0"
SIMPLE_UPDATE = "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate"


def _name():
    return "compute-%s.example.org" % uuid.uuid4().hex[:8]


def _managed_node(baremetal, bmc):
    node = embedded_ironic.enroll(baremetal, bmc, name=_name())
    node = embedded_ironic.manage(baremetal, node)
    assert node.provision_state == "manageable", node.last_error
    return node


def _firmware_step(image_server, tmp_path, version="2.1.0",
                   checksum=None, accelerator="fpga0"):
    path, good = embedded_images.make_firmware_image(tmp_path, version)
    return {"interface": "firmware", "step": "update_accelerator_firmware",
            "args": {"settings": [{"accelerator": accelerator,
                                   "url": image_server.url_for(path),
                                   "checksum": checksum or good,
                                   "version": version}]}}


def _simple_updates(bmc):
    return [r for r in bmc.requests()
            if r["method"] == "POST" and r["path"] == SIMPLE_UPDATE]


def _bmc_fpga_version(bmc):
    root = bmc.sushy()
    member = root.get_update_service().firmware_inventory.get_member(
        "/redfish/v1/UpdateService/FirmwareInventory/1-FPGA0")
    return member.version


def _firmware_components(baremetal, node):
    rsp = baremetal.get(f"/nodes/{node.id}/firmware", microversion="1.86")
    rsp.raise_for_status()
    return {c["component"]: c for c in rsp.json()["firmware"]}


def test_manage_writes_inventory_traits_and_firmware(baremetal, tmp_path):
    # System 1 has the default FPGA and GPU, system 2 no accelerator.
    bmc = embedded_bmc.BmcEmulator(tmp_path, systems=2, devices={"2": []})
    bmc.start()
    try:
        # NOTE: one after the other; Ironic on sqlite serializes badly.
        node = embedded_ironic.manage(baremetal, embedded_ironic.enroll(
            baremetal, bmc, name=_name()))
        bare = embedded_ironic.manage(baremetal, embedded_ironic.enroll(
            baremetal, bmc, system=2, name=_name()))
    finally:
        bmc.stop()
    assert node.provision_state == "manageable", node.last_error
    assert bare.provision_state == "manageable", bare.last_error

    document = node.extra["accelerators"]
    inventory.validate(document)
    assert document["node_uuid"] == node.id
    assert document["host"] == node.name
    devices = {d["id"]: d for d in document["devices"]}
    assert set(devices) == {"fpga0", "gpu0"}
    fpga = devices["fpga0"]
    assert (fpga["type"], fpga["vendor_id"], fpga["product_id"],
            fpga["pci_address"], fpga["firmware_version"],
            fpga["program_mode"]) == ("FPGA", "0x8086", "0x0b30",
                                      "0000:5e:00.0", "2.0.1", "dynamic")
    assert [r["id"] for r in fpga["regions"]] == ["0", "1"]
    assert fpga["regions"][1]["rp_uuid"] == inventory.region_rp_uuid(
        node.id, "fpga0", "1")
    gpu = devices["gpu0"]
    assert (gpu["program_mode"], [r["id"] for r in gpu["regions"]],
            gpu["regions"][0]["resource_class"]) == ("single", ["0"], "PGPU")
    assert {"CUSTOM_ACCEL_FPGA", "CUSTOM_ACCEL_GPU"} <= set(node.traits)
    components = _firmware_components(baremetal, node)
    assert components["accel:fpga0"]["current_version"] == "2.0.1"
    assert components["accel:gpu0"]["current_version"] == "90.04.38.00.03"
    # Ironic's own Redfish components are still cached.
    assert {"bios", "bmc"} <= set(components)

    assert bare.extra["accelerators"]["devices"] == []
    assert not any(t.startswith("CUSTOM_ACCEL_") for t in bare.traits)
    assert not any(c.startswith("accel:")
                   for c in _firmware_components(baremetal, bare))


def test_clean_updates_firmware_then_is_idempotent(
        baremetal, bmc_emulator, image_server, tmp_path):
    node = _managed_node(baremetal, bmc_emulator)
    baremetal.add_node_trait(node, "CUSTOM_OPERATOR_KEEP")
    step = _firmware_step(image_server, tmp_path)
    bmc_emulator.clear_requests()

    node = embedded_ironic.clean(baremetal, node, [step])

    assert node.provision_state == "manageable", node.last_error
    assert _bmc_fpga_version(bmc_emulator) == "2.1.0"
    [post] = _simple_updates(bmc_emulator)
    assert post["body"]["Targets"] == [
        "/redfish/v1/UpdateService/FirmwareInventory/1-FPGA0"]
    progress = node.driver_internal_info["accel_progress"]["fpga0"]
    assert progress["state"] == "Confirmed"
    assert progress["percent"] == 100
    assert any("updated successfully" in m for m in progress["messages"])
    assert "accel_updates" not in node.driver_internal_info
    fpga = node.extra["accelerators"]["devices"][0]
    assert fpga["firmware_version"] == "2.1.0"
    assert _firmware_components(baremetal, node)["accel:fpga0"][
        "current_version"] == "2.1.0"
    assert "CUSTOM_OPERATOR_KEEP" in node.traits

    # The same clean again: the device is already at 2.1.0.
    bmc_emulator.clear_requests()
    node = embedded_ironic.clean(baremetal, node, [step])
    assert node.provision_state == "manageable", node.last_error
    assert _simple_updates(bmc_emulator) == []


def test_bad_argument_and_wrong_checksum_fail_before_the_bmc(
        baremetal, bmc_emulator, image_server, tmp_path):
    node = _managed_node(baremetal, bmc_emulator)
    step = _firmware_step(image_server, tmp_path)
    step["args"]["settings"][0]["checksum"] = "md5:abc"
    bmc_emulator.clear_requests()

    node = embedded_ironic.clean(baremetal, node, [step])

    assert node.provision_state == "clean failed"
    assert "settings[0].checksum" in node.last_error

    wrong = "sha256:" + "0" * 64
    step["args"]["settings"][0]["checksum"] = wrong
    _recover(baremetal, node)
    embedded_ironic.wait_for_state(baremetal, node, "manageable")
    node = embedded_ironic.clean(baremetal, node, [step])

    assert node.provision_state == "clean failed"
    assert "fpga0" in node.last_error and wrong in node.last_error
    assert _simple_updates(bmc_emulator) == []
    assert _bmc_fpga_version(bmc_emulator) == "2.0.1"


def _recover(baremetal, node):
    # A failed clean step puts the node in maintenance, as Ironic does for
    # any clean step: the operator clears it and manages the node again.
    baremetal.unset_node_maintenance(node)
    baremetal.set_node_provision_state(node, "manage")


def test_failed_tasks_fail_clean_then_clean_again_works(
        baremetal, bmc_emulator, image_server, tmp_path):
    node = _managed_node(baremetal, bmc_emulator)
    step = _firmware_step(image_server, tmp_path)

    # The BMC task ends in Exception.
    bmc_emulator.set_faults(task_exception=True, task_seconds=1)
    node = embedded_ironic.clean(baremetal, node, [step])
    assert node.provision_state == "clean failed"
    assert node.id in node.last_error and "fpga0" in node.last_error
    assert "ended in state Exception" in node.last_error

    # The task says Completed but the version did not change.
    bmc_emulator.set_faults(task_exception=False, version_unchanged=True)
    _recover(baremetal, node)
    embedded_ironic.wait_for_state(baremetal, node, "manageable")
    node = embedded_ironic.clean(baremetal, node, [step])
    assert node.provision_state == "clean failed"
    assert "fpga0" in node.last_error
    assert "still '2.0.1'" in node.last_error and "2.1.0" in node.last_error

    # Fault gone: the same clean works.
    bmc_emulator.set_faults(version_unchanged=False)
    _recover(baremetal, node)
    embedded_ironic.wait_for_state(baremetal, node, "manageable")
    node = embedded_ironic.clean(baremetal, node, [step])
    assert node.provision_state == "manageable", node.last_error
    assert _bmc_fpga_version(bmc_emulator) == "2.1.0"


def test_bmc_unavailable_beyond_budget_fails_then_recovers(
        baremetal, bmc_emulator, image_server, tmp_path):
    node = _managed_node(baremetal, bmc_emulator)
    step = _firmware_step(image_server, tmp_path)
    bmc_emulator.set_faults(task_seconds=2)
    baremetal.set_node_provision_state(node, "clean", clean_steps=[step])
    embedded_ironic.wait_for_state(baremetal, node, "clean wait")
    # The fixture's Ironic gives an unreachable BMC 6 s.
    bmc_emulator.set_faults(unavailable_seconds=9)
    node = embedded_ironic.wait_for_state(
        baremetal, node, {"clean failed", "manageable"}, timeout=30)
    assert node.provision_state == "clean failed"
    assert "unavailable" in node.last_error and "fpga0" in node.last_error

    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            if _bmc_fpga_version(bmc_emulator):
                break
        except Exception:
            time.sleep(0.5)
    _recover(baremetal, node)
    embedded_ironic.wait_for_state(baremetal, node, "manageable")
    node = embedded_ironic.clean(baremetal, node, [step])
    assert node.provision_state == "manageable", node.last_error
    assert _bmc_fpga_version(bmc_emulator) == "2.1.0"


def test_conductor_restart_resumes_polling(
        baremetal, bmc_emulator, image_server, tmp_path, ironic_server):
    node = _managed_node(baremetal, bmc_emulator)
    step = _firmware_step(image_server, tmp_path)
    bmc_emulator.set_faults(task_seconds=6)
    baremetal.set_node_provision_state(node, "clean", clean_steps=[step])
    embedded_ironic.wait_for_state(baremetal, node, "clean wait")
    running = baremetal.get_node(node.id).driver_internal_info
    assert running["accel_updates"]["queue"][0]["monitor"]

    ironic_server.restart()

    node = embedded_ironic.wait_for_state(
        baremetal, node, {"manageable", "clean failed"}, timeout=60)
    assert node.provision_state == "manageable", node.last_error
    assert len(_simple_updates(bmc_emulator)) == 1
    assert _bmc_fpga_version(bmc_emulator) == "2.1.0"


def test_deploy_template_runs_program_accelerator_only_with_trait(
        baremetal, bmc_emulator, image_server, tmp_path):
    function_id = str(uuid.uuid4())
    path, checksum = embedded_images.make_firmware_image(
        tmp_path, "1.0", function_id=function_id, kind="function")
    trait = "CUSTOM_ACCEL_PROGRAM_%s" % uuid.uuid4().hex[:12].upper()
    template = baremetal.create_deploy_template(name=trait, steps=[{
        "interface": "firmware", "step": "program_accelerator",
        "priority": 150,
        "args": {"settings": [{"accelerator": "fpga0",
                               "url": image_server.url_for(path),
                               "checksum": checksum,
                               "function_id": function_id}]}}])
    try:
        node = _managed_node(baremetal, bmc_emulator)
        baremetal.add_node_trait(node, trait)
        baremetal.set_node_provision_state(node, "provide")
        embedded_ironic.wait_for_state(baremetal, node, "available")

        # Without the trait in instance_info the step does not run.
        bmc_emulator.clear_requests()
        image = {"image_source": path.as_uri()}
        baremetal.patch_node(node.id, [{"op": "add", "path": "/instance_info",
                                        "value": image}])
        baremetal.set_node_provision_state(node, "active")
        node = embedded_ironic.wait_for_state(
            baremetal, node, {"active", "deploy failed"})
        assert node.provision_state == "active", node.last_error
        assert _simple_updates(bmc_emulator) == []
        baremetal.set_node_provision_state(node, "deleted")
        embedded_ironic.wait_for_state(baremetal, node, "available")

        # With it, the template's step programs the FPGA.
        baremetal.patch_node(node.id, [{"op": "add", "path": "/instance_info",
                                        "value": dict(image, traits=[trait])}])
        baremetal.set_node_provision_state(node, "active")
        node = embedded_ironic.wait_for_state(
            baremetal, node, {"active", "deploy failed"})
        assert node.provision_state == "active", node.last_error
        assert len(_simple_updates(bmc_emulator)) == 1
        fpga = node.extra["accelerators"]["devices"][0]
        assert [r["function_id"] for r in fpga["regions"]] == [
            function_id, function_id]
        assert inventory.function_trait(
            "Intel", function_id) in node.traits
        assert trait in node.traits
    finally:
        baremetal.delete_deploy_template(template)


def _wait_for(read, check, timeout=30):
    deadline = time.monotonic() + timeout
    while True:
        value = read()
        if check(value):
            return value
        assert time.monotonic() < deadline, value
        time.sleep(0.5)


def test_progress_shows_then_abort_cancels_the_bmc_task(
        baremetal, bmc_emulator, image_server, tmp_path):
    node = _managed_node(baremetal, bmc_emulator)
    step = _firmware_step(image_server, tmp_path)
    bmc_emulator.set_faults(task_seconds=60)
    baremetal.set_node_provision_state(node, "clean", clean_steps=[step])
    embedded_ironic.wait_for_state(baremetal, node, "clean wait")
    assert baremetal.get_node(node.id).clean_step["abortable"] is True

    # Progress of the BMC task is visible in the node while it runs.
    info = _wait_for(
        lambda: baremetal.get_node(node.id).driver_internal_info,
        lambda i: (i.get("accel_progress", {}).get("fpga0", {})
                   .get("percent") or 0) > 0)
    assert info["accel_progress"]["fpga0"]["state"] == "Running"

    baremetal.set_node_provision_state(node, "abort")
    node = embedded_ironic.wait_for_state(baremetal, node, "clean failed")
    info = _wait_for(
        lambda: baremetal.get_node(node.id).driver_internal_info,
        lambda i: "accel_updates" not in i)
    progress = info["accel_progress"]["fpga0"]
    assert progress["state"] == "Aborted"
    assert "BMC task cancelled" in progress["messages"][-1]
    monitor = [r for r in bmc_emulator.requests()
               if r["method"] == "DELETE" and "/TaskService/" in r["path"]]
    assert len(monitor) == 1
    assert _bmc_fpga_version(bmc_emulator) == "2.0.1"

    # The node recovers and the same clean then works.
    bmc_emulator.set_faults(task_seconds=1)
    _recover(baremetal, node)
    embedded_ironic.wait_for_state(baremetal, node, "manageable")
    node = embedded_ironic.clean(baremetal, node, [step])
    assert node.provision_state == "manageable", node.last_error
    assert _bmc_fpga_version(bmc_emulator) == "2.1.0"


def test_clean_without_version_runs_twice_flashing_once(
        baremetal, bmc_emulator, image_server, tmp_path):
    node = _managed_node(baremetal, bmc_emulator)
    step = _firmware_step(image_server, tmp_path)
    del step["args"]["settings"][0]["version"]
    bmc_emulator.set_faults(task_seconds=1)

    node = embedded_ironic.clean(baremetal, node, [step])
    assert node.provision_state == "manageable", node.last_error
    assert _bmc_fpga_version(bmc_emulator) == "2.1.0"
    bmc_emulator.clear_requests()

    node = embedded_ironic.clean(baremetal, node, [step])
    assert node.provision_state == "manageable", node.last_error
    assert _simple_updates(bmc_emulator) == []
