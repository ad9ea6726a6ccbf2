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

"""The node's devices from cyborg_lite's wire documents: every deployable
of the host's devices, joined by the device id the deployables carry."""

import json

from cyborg_lite_dra import inventory

HOST = "compute-1.example.org"


class _Wire:
    """``GET /v2/devices?hostname=`` and ``GET /v2/deployables`` answers."""

    def __init__(self, devices, deployables):
        self._devices = devices
        self._deployables = deployables

    def devices(self, hostname):
        return [d for d in self._devices if d["hostname"] == hostname]

    def deployables(self):
        return self._deployables


def _device(uuid, pci, type_="FPGA", host=HOST, status="enabled"):
    return {"uuid": uuid, "type": type_, "model": "m", "hostname": host,
            "status": status,
            "std_board_info": json.dumps({"pci_address": pci,
                                          "vendor_id": "0x8086",
                                          "product_id": "0x0b30"})}


def _deployable(uuid, device_id, name, rc="FPGA", count=2):
    return {"uuid": uuid, "device_id": device_id, "name": name,
            "rp_uuid": f"rp-{uuid}", "num_accelerators": count,
            "bitstream_id": None,
            "attributes_list": json.dumps([{"rc": rc}])}


def _example():
    """The example inventory's node: an FPGA of two regions, a whole T4,
    and another host's FPGA at the same address."""
    devices = [_device("fpga", "0000:5e:00.0"),
               _device("gpu", "0000:af:00.0", "GPU"),
               _device("other", "0000:5e:00.0", host="compute-2")]
    deployables = [
        _deployable("r0", 1, f"{HOST}_0000:5e:00.0_0"),
        _deployable("r1", 1, f"{HOST}_0000:5e:00.0_1"),
        _deployable("t4", 2, f"{HOST}_0000:af:00.0", "PGPU", 1),
        _deployable("o0", 3, "compute-2_0000:5e:00.0_0"),
    ]
    return _Wire(devices, deployables)


def test_every_deployable_of_the_host_is_a_device_whole_gpu_included():
    found = {d.name: d for d in inventory.node_devices(_example(), HOST)}
    assert sorted(found) == ["fpga-0000-5e-00-0-r0", "fpga-0000-5e-00-0-r1",
                             "gpu-0000-af-00-0"]
    gpu = found["gpu-0000-af-00-0"]
    assert (gpu.deployable_uuid, gpu.region, gpu.pci_bus_id,
            gpu.device_uuid) == ("t4", None, "0000:af:00.0", "gpu")
    region = found["fpga-0000-5e-00-0-r1"]
    assert (region.deployable_uuid, region.region, region.pci_bus_id,
            region.pci_address) == ("r1", "1", None, "0000:5e:00.0")


def test_a_deployable_follows_its_device_id_whatever_its_name():
    wire = _example()
    wire._deployables.append(_deployable("r2", 1, "renamed-by-an-admin"))
    found = {d.deployable_uuid: d
             for d in inventory.node_devices(wire, HOST)}
    assert set(found) == {"r0", "r1", "r2", "t4"}
    assert found["r2"].region == "rp-r2"
    assert inventory.DNS_LABEL.match(found["r2"].name)


def test_a_deployable_without_handles_is_not_published():
    wire = _example()
    wire._deployables[2]["num_accelerators"] = 0
    names = [d.name for d in inventory.node_devices(wire, HOST)]
    assert "gpu-0000-af-00-0" not in names


def test_a_device_id_two_devices_claim_is_nobody_s():
    wire = _example()
    wire._deployables[2]["device_id"] = 1
    assert inventory.node_devices(wire, HOST) == []


def test_a_vgpu_card_gives_its_address_as_the_mdev_parent():
    wire = _example()
    wire._deployables[2].update(
        num_accelerators=4,
        attributes_list=json.dumps([{"rc": "VGPU"}]))
    (gpu,) = [d for d in inventory.node_devices(wire, HOST)
              if d.type == "GPU"]
    assert gpu.pci_bus_id == "0000:af:00.0"


def test_a_host_without_devices_has_none():
    assert inventory.node_devices(_example(), "compute-9") == []


def test_a_single_handle_that_may_be_a_vf_gets_no_pci_bus_id():
    wire = _example()
    # A single-region FPGA with one handle: a VF or the PF, unknown before
    # the bind.
    wire._deployables[2].update(
        attributes_list=json.dumps([{"rc": "FPGA"}]))
    (gpu,) = [d for d in inventory.node_devices(wire, HOST)
              if d.type == "GPU"]
    assert gpu.pci_bus_id is None


def test_a_region_s_state_and_its_card_s_health_are_read():
    wire = _example()
    wire._devices[0]["health"] = "Warning"
    wire._deployables[1]["state"] = "error"
    found = {d.name: d for d in inventory.node_devices(wire, HOST)}
    assert found["fpga-0000-5e-00-0-r1"].region_state == "error"
    assert found["fpga-0000-5e-00-0-r1"].device_health == "Warning"
    assert found["fpga-0000-5e-00-0-r0"].device_health == "Warning"
    assert found["gpu-0000-af-00-0"].region_state is None
    assert found["gpu-0000-af-00-0"].device_health is None
