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

"""What a BMC says of a card's health reaches the node's inventory
document, in a real Ironic against the BMC emulator: ``manage`` (the
inventory refresh verify step) reads Redfish ``Status.Health``, and a
manual clean's refresh reads it again."""

import uuid

from accel_common import inventory
from accel_tools.embedded import bmc as embedded_bmc
from accel_tools.embedded import ironic as embedded_ironic

REFRESH = {"interface": "firmware", "step": "refresh_accelerator_inventory"}


def _fpga(health):
    return [{"id": "CPU0", "type": "CPU"},
            {"id": "FPGA0", "type": "FPGA", "manufacturer": "Intel",
             "model": "PAC Arria10", "vendor_id": "0x8086",
             "device_id": "0x0b30", "pci_address": "0000:5e:00.0",
             "slots": [{"id": "0"}, {"id": "1"}], "health": health}]


def _health(node):
    document = node.extra["accelerators"]
    inventory.validate(document)
    (device,) = document["devices"]
    return device["health"]


def test_the_bmc_s_health_reaches_the_document(baremetal, tmp_path):
    bmc = embedded_bmc.BmcEmulator(tmp_path, devices={"1": _fpga(
        "Critical")})
    bmc.start()
    try:
        node = embedded_ironic.manage(baremetal, embedded_ironic.enroll(
            baremetal, bmc, name=f"compute-{uuid.uuid4().hex[:8]}"))
        assert node.provision_state == "manageable", node.last_error
        assert _health(node) == "Critical"

        bmc.set_devices(_fpga("OK"))
        node = embedded_ironic.clean(baremetal, node, [REFRESH])
        assert node.provision_state == "manageable", node.last_error
        assert _health(node) == "OK"
    finally:
        bmc.stop()
