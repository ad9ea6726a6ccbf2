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

"""enroll.yml and deploy-templates.yml with ``--check`` against a real
Ironic: on a fresh cloud they run and change nothing; after a real run,
check mode sees nothing left to do."""

import uuid

from tests.functional.playbooks import ansible_runner
from tests.functional.playbooks import test_baremetal_playbooks as plays

# The fleet of two nodes behind the BMC emulator, as the bare metal tests use.
fleet = plays.fleet
two_node_bmc = plays.two_node_bmc


def test_check_mode_on_a_fresh_cloud_then_after_a_real_run(
        tmp_path, fleet, baremetal):
    names, inventory = fleet
    purpose = "chk" + uuid.uuid4().hex[:6]
    templates = {"ironic_accel_deploy_templates_list": [
        {"purpose": purpose, "nodes": names,
         "settings": [{"accelerator": "FPGA",
                       "url": "http://192.0.2.1/chk.bin",
                       "checksum": "sha256:" + "a" * 64}]}]}

    # NOTE(ironic-accel): one node at a time, as the bare metal tests run
    # enroll: the embedded Ironic's sqlite takes one writer.
    serial = plays._ONE_BY_ONE
    enroll = ansible_runner.run_playbook("enroll.yml", inventory, tmp_path,
                                         extra_vars=serial, check=True)
    templates_run = ansible_runner.run_playbook(
        "deploy-templates.yml", inventory, tmp_path, extra_vars=templates,
        check=True)

    assert enroll.returncode == 0, enroll.output
    assert templates_run.returncode == 0, templates_run.output
    assert all(baremetal.find_node(name) is None for name in names)
    trait = "CUSTOM_ACCEL_" + purpose.upper()
    assert trait not in [t.name for t in baremetal.deploy_templates()]

    real = ansible_runner.run_playbook("enroll.yml", inventory, tmp_path,
                                       extra_vars=serial)
    assert real.returncode == 0, real.output
    again = ansible_runner.run_playbook("enroll.yml", inventory, tmp_path,
                                        extra_vars=serial, check=True)

    assert again.returncode == 0, again.output
    assert again.changed() == 0, again.output
