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

"""enroll.yml, firmware.yml and deploy-templates.yml against a real Ironic
(all-in-one, from PyPI) with the ironic-accel plugin and the Redfish BMC
emulator, run with ansible-playbook exactly as an operator runs them."""

import uuid

import pytest

from accel_tools.embedded import bmc as embedded_bmc
from accel_tools.embedded import images as embedded_images
from accel_tools.embedded import ironic as embedded_ironic
from tests.functional.playbooks import ansible_runner

#: Ironic's fake boot/deploy interfaces (the test Ironic enables no others);
#: the role itself sets firmware, power and management.
_EXTRA_INTERFACES = {
    name: value for name, value in embedded_ironic.NODE_INTERFACES.items()
    if name not in ("firmware_interface", "power_interface",
                    "management_interface")}


@pytest.fixture
def two_node_bmc(tmp_path):
    """A BMC emulator with two systems, each with an FPGA at 2.0.1."""
    workdir = tmp_path / "bmc"
    workdir.mkdir()
    emulator = embedded_bmc.BmcEmulator(workdir, systems=2).start()
    yield emulator
    emulator.stop()


@pytest.fixture
def images(tmp_path):
    """An HTTP server for firmware images written under tmp_path/images."""
    root = tmp_path / "images"
    root.mkdir()
    server = embedded_images.ImageServer(root)
    yield root, server
    server.stop()


@pytest.fixture
def fleet(tmp_path, ironic_server, two_node_bmc):
    """An inventory of two nodes (unique names) behind the emulator."""
    prefix = "pb-" + uuid.uuid4().hex[:8]
    names = [f"{prefix}-0", f"{prefix}-1"]
    group_vars = dict(
        bmc_username=two_node_bmc.username,
        bmc_password=two_node_bmc.password,
        bmc_verify_ca=False,
        ironic_accel_enroll_interfaces_extra=_EXTRA_INTERFACES,
        ironic_accel_enroll_poll_delay=1,
        ironic_accel_firmware_poll_delay=1,
        ironic_accel_firmware_timeout=120,
        **ansible_runner.cli_vars(ironic_server.url))
    hosts = {name: {"bmc_address": two_node_bmc.url,
                    "bmc_system_id": two_node_bmc.system_uri(index + 1)}
             for index, name in enumerate(names)}
    inventory = ansible_runner.write_inventory(
        tmp_path / "hosts.yml",
        {"all": {"vars": ansible_runner.cli_vars(ironic_server.url)},
         "baremetal": {"hosts": hosts, "vars": group_vars}})
    return names, inventory


#: NOTE(ironic-accel): the test Ironic keeps its database in sqlite, where two
#: concurrent verify steps writing node traits can fail with "database is
#: locked"; production Ironic uses MySQL. Enroll one node at a time here.
_ONE_BY_ONE = {"ironic_accel_enroll_serial": 1}


def _fpga_versions(bmc):
    return [device["firmware_version"]
            for system in bmc.state()["systems"].values()
            for device in system["devices"] if device["type"] == "FPGA"]


def _simple_updates(bmc):
    return [r for r in bmc.requests() if r["path"].endswith("SimpleUpdate")]


def test_enroll_manages_nodes_reads_accelerators_and_updates_only_changes(
        tmp_path, fleet, baremetal, two_node_bmc):
    names, inventory = fleet

    first = ansible_runner.run_playbook("enroll.yml", inventory, tmp_path,
                                         extra_vars=_ONE_BY_ONE)

    assert first.returncode == 0, first.output
    assert all(first.recap[name]["changed"] > 0 for name in names)
    for name in names:
        node = baremetal.get_node(name)
        assert node.provision_state == "manageable"
        assert node.driver == "accel-redfish"
        assert node.firmware_interface == "accel-redfish"
        assert node.power_interface == "redfish"
        devices = node.extra["accelerators"]["devices"]
        assert "FPGA" in {device["type"] for device in devices}
        # The role's report names each node's accelerators.
        assert f"{name} ({node.id}): manageable" in first.output

    # The operator moves one node's BMC address: only that node changes, the
    # other is left alone (idempotent).
    moved = ansible_runner.write_inventory(
        tmp_path / "moved.yml",
        {"baremetal": {"hosts": {names[0]: {
            "bmc_address": two_node_bmc.url.replace("127.0.0.1",
                                                    "localhost")}}}})
    second = ansible_runner.run_playbook("enroll.yml", [inventory, moved],
                                         tmp_path, extra_vars=_ONE_BY_ONE)

    assert second.returncode == 0, second.output
    assert second.recap[names[0]]["changed"] == 1, second.output
    assert second.recap[names[1]]["changed"] == 0, second.output
    moved_node = baremetal.get_node(names[0])
    assert moved_node.driver_info["redfish_address"].startswith(
        "http://localhost:")
    assert moved_node.provision_state == "manageable"
    assert baremetal.get_node(names[1]).driver_info[
        "redfish_address"] == two_node_bmc.url


def test_firmware_rollout_updates_every_node_and_stops_on_failure(
        tmp_path, fleet, baremetal, two_node_bmc, images):
    names, inventory = fleet
    root, server = images
    # Enrolled through the API directly: enroll.yml has its own test.
    for index, name in enumerate(names):
        node = embedded_ironic.enroll(baremetal, two_node_bmc, index + 1,
                                      name=name)
        assert embedded_ironic.manage(
            baremetal, node).provision_state == "manageable"
    path, checksum = embedded_images.make_firmware_image(root, "2.1.0")
    settings = [{"accelerator": "FPGA", "url": server.url_for(path),
                 "checksum": checksum, "version": "2.1.0"}]
    wrong = [dict(settings[0], checksum="sha256:" + "0" * 64)]

    # A bad checksum fails the first batch and stops the rollout there.
    failed = ansible_runner.run_playbook(
        "firmware.yml", inventory, tmp_path,
        extra_vars={"ironic_accel_firmware_settings": wrong})

    assert failed.returncode != 0
    first, second = (baremetal.get_node(name) for name in names)
    assert first.provision_state == "clean failed"
    assert first.is_maintenance and first.fault == "clean failure"
    assert f"Node {names[0]}: clean did not end manageable" in failed.output
    assert second.provision_state == "manageable"
    assert names[1] not in failed.recap, failed.output
    assert _simple_updates(two_node_bmc) == []
    assert _fpga_versions(two_node_bmc) == ["2.0.1", "2.0.1"]

    # Fixed settings: the failed node is retried, both are updated in turn.
    done = ansible_runner.run_playbook(
        "firmware.yml", inventory, tmp_path,
        extra_vars={"ironic_accel_firmware_settings": settings,
                    "ironic_accel_firmware_serial": 1})

    assert done.returncode == 0, done.output
    assert _fpga_versions(two_node_bmc) == ["2.1.0", "2.1.0"]
    for name in names:
        assert baremetal.get_node(name).provision_state == "manageable"
    assert len(_simple_updates(two_node_bmc)) == 2
    assert "(was 2.0.1)" in done.output, done.output


def test_deploy_templates_created_and_traits_given_once(
        tmp_path, ironic_server, baremetal):
    purpose = "inf" + uuid.uuid4().hex[:6]
    trait = "CUSTOM_ACCEL_" + purpose.upper()
    node = baremetal.create_node(driver="fake-hardware",
                                 name="pb-dt-" + uuid.uuid4().hex[:8])
    inventory = ansible_runner.write_inventory(
        tmp_path / "hosts.yml",
        {"all": {"vars": ansible_runner.cli_vars(ironic_server.url)}})
    settings = [{"accelerator": "FPGA", "url": "http://192.0.2.1/inf.bin",
                 "checksum": "sha256:" + "a" * 64, "function_id": "inf"}]
    templates = {"ironic_accel_deploy_templates_list": [
        {"purpose": purpose, "settings": settings, "nodes": [node.name]}]}

    first = ansible_runner.run_playbook(
        "deploy-templates.yml", inventory, tmp_path, extra_vars=templates)
    second = ansible_runner.run_playbook(
        "deploy-templates.yml", inventory, tmp_path, extra_vars=templates)

    assert first.returncode == 0, first.output
    template = baremetal.get_deploy_template(trait)
    assert template.steps == [{"interface": "firmware",
                               "step": "program_accelerator",
                               "args": {"settings": settings},
                               "priority": 150}]
    assert trait in baremetal.get_node(node.id).traits
    assert first.changed() == 2
    assert second.returncode == 0, second.output
    assert second.changed() == 0, second.output

    templates["ironic_accel_deploy_templates_list"][0]["state"] = "absent"
    gone = ansible_runner.run_playbook(
        "deploy-templates.yml", inventory, tmp_path, extra_vars=templates)

    assert gone.returncode == 0, gone.output
    assert trait not in [t.name for t in baremetal.deploy_templates()]
