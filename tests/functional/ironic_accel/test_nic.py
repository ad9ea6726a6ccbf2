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

"""An SR-IOV NIC in a real Ironic, against the BMC emulator.

The emulator serves a dual-port ConnectX-5 (NetworkAdapter, one
NetworkDeviceFunction per PF, PFs 15b3:1017 and enabled VFs 15b3:1018 as
PCIe functions); ``manage`` runs the inventory refresh and the node reports
one NIC device, its PF's address and ids, and no VF.
"""

import uuid

from accel_common import inventory
from accel_tools.embedded import bmc as embedded_bmc
from accel_tools.embedded import images as embedded_images
from accel_tools.embedded import ironic as embedded_ironic

ADAPTER = "/redfish/v1/Chassis/1/NetworkAdapters/NIC0"
CONNECTX5 = {"id": "NIC0", "type": "NIC",
             "manufacturer": "Mellanox Technologies",
             "model": "ConnectX-5 EN 25GbE", "vendor_id": "0x15b3",
             "device_id": "0x1017", "vf_device_id": "0x1018",
             "pci_address": "0000:3b:00.0", "firmware_version": "16.35.2000",
             "ports": 2, "max_vfs": 8, "vfs": 4}


def _name():
    return "compute-%s.example.org" % uuid.uuid4().hex[:8]


def _firmware_components(baremetal, node):
    rsp = baremetal.get(f"/nodes/{node.id}/firmware", microversion="1.86")
    rsp.raise_for_status()
    return {c["component"]: c for c in rsp.json()["firmware"]}


def test_manage_reports_the_sriov_nic(baremetal, tmp_path):
    bmc = embedded_bmc.BmcEmulator(tmp_path, devices={"1": [
        {"id": "CPU0", "type": "CPU"}, CONNECTX5]})
    bmc.start()
    try:
        node = embedded_ironic.manage(baremetal, embedded_ironic.enroll(
            baremetal, bmc, name=_name()))
    finally:
        bmc.stop()
    assert node.provision_state == "manageable", node.last_error
    document = node.extra["accelerators"]
    inventory.validate(document)
    assert document["schema_version"] == "1.0"
    (nic,) = document["devices"]
    assert nic == {
        "id": "nic0", "type": "NIC", "vendor_id": "0x15b3",
        "product_id": "0x1017", "vendor": "Mellanox Technologies",
        "model": "ConnectX-5 EN 25GbE", "pci_address": "0000:3b:00.0",
        "redfish_uri": ADAPTER, "firmware_version": "16.35.2000",
        "health": "OK", "program_mode": "single",
        "regions": [{"id": "0", "resource_class": "CUSTOM_NIC",
                     "function_id": None,
                     "rp_uuid": inventory.region_rp_uuid(node.id, "nic0",
                                                         "0")}]}
    assert "CUSTOM_ACCEL_NIC" in node.traits
    components = _firmware_components(baremetal, node)
    assert components["accel:nic0"]["current_version"] == "16.35.2000"


def test_clean_updates_nic_firmware(baremetal, tmp_path):
    bmc = embedded_bmc.BmcEmulator(tmp_path, devices={"1": [CONNECTX5]})
    bmc.start()
    images = embedded_images.ImageServer(tmp_path)
    try:
        node = embedded_ironic.manage(baremetal, embedded_ironic.enroll(
            baremetal, bmc, name=_name()))
        assert node.provision_state == "manageable", node.last_error
        path, checksum = embedded_images.make_firmware_image(
            tmp_path, "16.35.4030", device_type="NIC")
        step = {"interface": "firmware", "step": "update_accelerator_firmware",
                "args": {"settings": [{"accelerator": "nic0",
                                       "url": images.url_for(path),
                                       "checksum": checksum,
                                       "version": "16.35.4030"}]}}
        node = embedded_ironic.clean(baremetal, node, [step], timeout=120)
        assert node.provision_state == "manageable", node.last_error
        posts = [r for r in bmc.requests() if r["method"] == "POST"
                 and r["path"].startswith("/redfish/v1/UpdateService")]
        assert len(posts) == 1
        (device,) = bmc.state()["systems"]["1"]["devices"]
        assert device["firmware_version"] == "16.35.4030"
    finally:
        images.stop()
        bmc.stop()
    (nic,) = node.extra["accelerators"]["devices"]
    assert nic["firmware_version"] == "16.35.4030"
