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

"""The inventory document's versions: 1.0 as before, 1.1 without addresses."""

import copy

import pytest

from accel_common import exception
from accel_common import inventory
from accel_common.placement import tree


def _device(**fields):
    device = {"id": "gpu0", "type": "GPU", "vendor_id": "0x10de",
              "product_id": "0x20b0", "vendor": "NVIDIA",
              "model": "NVIDIA_A100-SXM4-40GB", "pci_address": "0000:17:00.0",
              "redfish_uri": "/redfish/v1/Systems/Node0/Processors/GPU0",
              "firmware_version": "92.00.19.00.13", "program_mode": "single",
              "regions": [{"id": "0",
                           "rp_uuid": inventory.region_rp_uuid("n", "gpu0",
                                                               "0"),
                           "resource_class": "PGPU", "function_id": None}]}
    device.update(fields)
    return device


def _document(version, *devices):
    return {"schema_version": version, "node_uuid": "n", "host": "compute-1",
            "devices": list(devices)}


def test_version_1_0_documents_still_validate():
    document = _document("1.0", _device())
    assert inventory.validate(document) is document


@pytest.mark.parametrize("field", inventory.IN_BAND_FIELDS)
def test_version_1_0_still_requires_in_band_fields(field):
    with pytest.raises(exception.InvalidInventory, match=field):
        inventory.validate(_document("1.0", _device(**{field: None})))


def test_version_1_1_takes_a_device_without_address_or_ids():
    device = _device(pci_address=None, vendor_id=None, product_id=None)
    inventory.validate(_document("1.1", device))
    for field in inventory.IN_BAND_FIELDS:
        device.pop(field)
    inventory.validate(_document("1.1", device))


def test_version_1_1_needs_redfish_uri_without_address():
    device = _device(pci_address=None, redfish_uri=None)
    with pytest.raises(exception.InvalidInventory, match="redfish_uri"):
        inventory.validate(_document("1.1", device))


def test_version_1_1_still_checks_what_is_given():
    with pytest.raises(exception.InvalidInventory, match="pci_address"):
        inventory.validate(_document("1.1", _device(pci_address="17:00.0")))
    with pytest.raises(exception.InvalidInventory, match="vendor_id"):
        inventory.validate(_document("1.1", _device(vendor_id="10de")))


def test_unknown_version_is_named():
    with pytest.raises(exception.InvalidInventory,
                       match=r"'2\.0' is not one of .*1\.0, 1\.1"):
        inventory.validate(_document("2.0", _device()))


def test_writer_names_the_lowest_version_needed():
    assert inventory.version_for([_device()]) == "1.0"
    assert inventory.version_for([]) == "1.0"
    assert inventory.version_for([_device(product_id=None)]) == "1.1"


def test_region_label_uses_address_else_id():
    device = _device(pci_address="0000:AF:00.0")
    assert inventory.region_label(device, device["regions"][0]) == (
        "0000:af:00.0/0")
    device = _device(pci_address=None)
    assert inventory.region_label(device, device["regions"][0]) == "gpu0/0"


def test_placement_tree_of_device_without_address_or_ids():
    device = _device(pci_address=None, vendor_id=None, product_id=None)
    fpga = _device(id="fpga0", type="FPGA", pci_address=None, vendor_id=None,
                   product_id=None, vendor="Intel(R) Corporation",
                   model="Stratix 10",
                   regions=[dict(copy.deepcopy(device["regions"][0]),
                                 rp_uuid=inventory.region_rp_uuid(
                                     "n", "fpga0", "0"),
                                 resource_class="FPGA")])
    desired = tree.desired_tree(_document("1.1", device, fpga))
    gpu_rp, fpga_rp = desired.providers
    assert (gpu_rp.name, gpu_rp.pci_address, gpu_rp.total) == (
        "compute-1_gpu0", None, 1)
    # No product id: no trait that would name one.
    assert gpu_rp.traits == {"OWNER_CYBORG"}
    assert fpga_rp.traits == {"OWNER_CYBORG", "CUSTOM_FPGA_INTEL",
                              "CUSTOM_FPGA_INTEL_STRATIX_10"}
    assert tree.vendor_name({"vendor": None, "vendor_id": None}) == "UNKNOWN"


def _nic(*handles, pci="0000:3b:00.0"):
    return {"id": "nic0", "type": "NIC", "vendor_id": "0x8086",
            "product_id": "0x1572", "pci_address": pci,
            "program_mode": "single",
            "regions": [{"id": "p0",
                         "rp_uuid": inventory.region_rp_uuid("n", "nic0",
                                                             "p0"),
                         "resource_class": "CUSTOM_NIC",
                         "attach_handles": list(handles)}]}


def _vf(address, physnet="physnet1"):
    handle = {"type": "PCI", "pci_address": address}
    if physnet is not None:
        handle["physical_network"] = physnet
    return handle


def test_nic_handle_without_physical_network_is_refused_by_name():
    document = _document("1.0", _nic(_vf("0000:3b:02.0"),
                                     _vf("0000:3b:02.1", physnet=None)))
    with pytest.raises(exception.InvalidInventory) as error:
        inventory.validate(document)
    message = str(error.value)
    assert message.startswith(
        "document.devices[0].regions[0].attach_handles[1].physical_network")
    assert "0000:3b:00.0/p0" in message and "0000:3b:02.1" in message


def test_nic_region_with_two_physical_networks_is_refused():
    document = _document("1.0", _nic(_vf("0000:3b:02.0"),
                                     _vf("0000:3b:02.1", "physnet2")))
    with pytest.raises(exception.InvalidInventory,
                       match="mixes physical networks physnet1 "
                             r"\(0000:3b:02.0\), physnet2"):
        inventory.validate(document)


def test_nic_region_with_port_and_its_vfs_is_refused():
    document = _document("1.0", _nic(_vf("0000:3b:00.0"),
                                     _vf("0000:3b:02.0")))
    with pytest.raises(exception.InvalidInventory,
                       match="both the device's own function"):
        inventory.validate(document)


def test_nic_physical_network_needs_a_letter_or_digit():
    document = _document("1.0", _nic(_vf("0000:3b:02.0", "--")))
    with pytest.raises(exception.InvalidInventory,
                       match="no letter or digit"):
        inventory.validate(document)


def test_physical_network_is_not_required_outside_nics():
    inventory.validate(_document("1.0", _device(regions=[dict(
        _device()["regions"][0],
        attach_handles=[_vf("0000:17:00.0", physnet=None)])])))


def test_nic_traits_are_named_as_cyborg_names_them():
    assert inventory.physnet_trait("physnet1") == "CUSTOM_PHYSNET1"
    assert inventory.physnet_trait("sriov-net.a") == "CUSTOM_SRIOV_NET_A"
    device = _nic(_vf("0000:3b:02.0"))
    assert inventory.nic_function(
        device, _vf("0000:3B:00.0")) == inventory.NIC_PF_TRAIT
    assert inventory.nic_function(
        device, _vf("0000:3b:02.0")) == inventory.NIC_VF_TRAIT


def test_region_traits_must_be_custom_or_standard():
    device = _device()
    device["regions"][0]["traits"] = [
        "CUSTOM_QAT_GEN4", "HW_GPU_CUDA_COMPUTE_CAPABILITY_V1_0"]
    document = _document("1.0", device)
    assert inventory.validate(document) is document
    device["regions"][0]["traits"] = ["CUSTOM_QAT_GEN4", "QAT_GEN4"]
    with pytest.raises(exception.InvalidInventory,
                       match=r"regions\[0\]\.traits\[1\]: 'QAT_GEN4' is "
                             "neither CUSTOM_ nor a standard trait"):
        inventory.validate(document)
    device["regions"][0]["traits"] = ["custom-qat"]
    with pytest.raises(exception.InvalidInventory,
                       match=r"regions\[0\]\.traits\[0\]"):
        inventory.validate(document)


@pytest.mark.parametrize("version", inventory.SCHEMA_VERSIONS)
@pytest.mark.parametrize("health", ["OK", "Warning", "Critical", None])
def test_a_device_may_say_its_bmc_health(version, health):
    document = _document(version, _device(health=health))
    assert inventory.validate(document) is document


@pytest.mark.parametrize("health", ["ok", "Failed", 3, ""])
def test_a_health_the_bmc_does_not_define_is_refused(health):
    with pytest.raises(exception.InvalidInventory,
                       match=r"devices\[0\]\.health"):
        inventory.validate(_document("1.1", _device(health=health)))
