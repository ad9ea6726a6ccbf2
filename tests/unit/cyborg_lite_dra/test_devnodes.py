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

import json
import os

import pytest

from cyborg_lite_dra import devnodes

ADDRESS = "0000:5e:00.1"


def _arq(handle_type="PCI", **info):
    base = {"domain": "0000", "bus": "5e", "device": "00", "function": "1"}
    base.update(info)
    return {"uuid": "arq-1", "attach_handle_type": handle_type,
            "attach_handle_info": base}


def _sysfs(tmp_path, address=ADDRESS, group="42"):
    device = tmp_path / "bus" / "pci" / "devices" / address
    device.mkdir(parents=True)
    (tmp_path / "kernel" / "iommu_groups" / group).mkdir(parents=True)
    os.symlink(tmp_path / "kernel" / "iommu_groups" / group,
               device / "iommu_group")
    return device


def test_a_pci_handle_gets_its_vfio_group(tmp_path):
    _sysfs(tmp_path)
    assert devnodes.device_nodes(_arq(), str(tmp_path)) == [
        {"path": "/dev/vfio/42"}, {"path": "/dev/vfio/vfio"}]


def test_an_mdev_handle_gets_the_group_of_its_own_mdev(tmp_path):
    parent = tmp_path / "bus" / "pci" / "devices" / ADDRESS
    parent.mkdir(parents=True)
    # NOTE(cyborg_lite_dra): aaaa is another user's mdev of the asked type;
    # cccc is this handle's.
    for name, mdev_type, group in (("aaaa", "nvidia-222", "8"),
                                   ("bbbb", "nvidia-221", "9"),
                                   ("cccc", "nvidia-222", "10")):
        (parent / name).mkdir()
        (tmp_path / "types" / mdev_type).mkdir(parents=True, exist_ok=True)
        os.symlink(tmp_path / "types" / mdev_type, parent / name /
                   "mdev_type")
        (tmp_path / "groups" / group).mkdir(parents=True)
        os.symlink(tmp_path / "groups" / group, parent / name /
                   "iommu_group")

    def arq(mdev_uuid, asked_type="nvidia-222"):
        return dict(_arq("MDEV", asked_type=asked_type),
                    attach_handle_uuid=mdev_uuid)

    assert devnodes.device_nodes(arq("cccc"), str(tmp_path))[0] == {
        "path": "/dev/vfio/10"}
    with pytest.raises(devnodes.DeviceNodeError,
                       match="no mediated device dddd of type nvidia-222 "
                             "on 0000:5e:00.1 .create it: mdevctl start -u "
                             "dddd -p 0000:5e:00.1 -t nvidia-222"):
        devnodes.device_nodes(arq("dddd"), str(tmp_path))
    with pytest.raises(devnodes.DeviceNodeError, match="no mediated device"):
        devnodes.device_nodes(arq("bbbb"), str(tmp_path))


def test_a_handle_without_a_group_fails_unless_simulated(tmp_path):
    with pytest.raises(devnodes.DeviceNodeError,
                       match=f"PCI function {ADDRESS} has no IOMMU group"):
        devnodes.device_nodes(_arq(), str(tmp_path))
    assert devnodes.device_nodes(_arq(), str(tmp_path), "/dev/null") == [
        {"path": "/dev/cyborg-lite/0000-5e-00.1", "hostPath": "/dev/null"}]


def test_a_handle_without_an_address_is_refused():
    with pytest.raises(devnodes.DeviceNodeError, match="no PCI address"):
        devnodes.pci_address({"uuid": "x", "attach_handle_info": {}})


def test_environment_as_the_sriov_device_plugin_writes_it():
    env = devnodes.environment({"intel.com/sriov-net": [
        ("0000:03:02.1", [{"path": "/dev/vfio/66"},
                          {"path": "/dev/vfio/vfio"}]),
        ("0000:03:02.2", [{"path": "/dev/vfio/67"},
                          {"path": "/dev/vfio/vfio"}])]})
    assert env[0] == "PCIDEVICE_INTEL_COM_SRIOV_NET=0000:03:02.1,0000:03:02.2"
    name, _, value = env[1].partition("=")
    assert name == "PCIDEVICE_INTEL_COM_SRIOV_NET_INFO"
    assert json.loads(value)["0000:03:02.2"] == {
        "generic": {"deviceID": "0000:03:02.2"},
        "vfio": {"dev-mount": "/dev/vfio/67", "mount": "/dev/vfio/vfio"}}
