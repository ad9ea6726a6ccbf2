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

"""nvidia_mdev: vGPU types and mdev create/remove on a fake sysfs tree."""

import os
import uuid

import pytest

from cyborg_lite.agent import exception
from cyborg_lite.agent.drivers import base
from cyborg_lite.agent.drivers import nvidia_mdev
from tests.unit.cyborg_lite.agent.conftest import copy_sysfs
from tests.unit.cyborg_lite.agent.conftest import make_conf

T4 = "0000:af:00.0"
TYPES = os.path.join("sys", "class", "mdev_bus", T4, "mdev_supported_types")


@pytest.fixture
def root(tmp_path):
    return copy_sysfs("sysfs_nvidia", tmp_path)


def _driver(root):
    return nvidia_mdev.NvidiaMdevDriver(make_conf(sysfs_root=root))


def test_a_time_sliced_gpu_offers_one_vgpu_type_at_a_time(root):
    """A T4 (Turing) runs one vGPU type at a time: offering 15 nvidia-222
    and 7 nvidia-223 handles at once would count it twice."""
    devices = {d["pci_address"]: d for d in _driver(root).discover()}

    t4 = devices[T4]
    assert (t4["type"], t4["vendor_id"], t4["product_id"]) == (
        "GPU", "0x10de", "0x1eb8")
    handles = t4["regions"][0]["attach_handles"]
    assert {h["mdev_type"] for h in handles} == {"nvidia-222"}
    assert len(handles) == 15
    assert {h["type"] for h in handles} == {"MDEV"}


def test_the_operator_picks_the_vgpu_type(root):
    driver = nvidia_mdev.NvidiaMdevDriver(make_conf(
        sysfs_root=root, enabled_vgpu_types=["nvidia-999", "nvidia-223"]))
    t4 = {d["pci_address"]: d for d in driver.discover()}[T4]
    handles = t4["regions"][0]["attach_handles"]
    assert {h["mdev_type"] for h in handles} == {"nvidia-223"}
    assert len(handles) == 7


def test_the_type_in_use_is_the_one_offered(root):
    # a vGPU of nvidia-223 exists (the kernel lists it under devices/)
    os.makedirs(os.path.join(root, TYPES, "nvidia-223", "devices",
                             str(uuid.uuid4())))
    t4 = {d["pci_address"]: d for d in _driver(root).discover()}[T4]
    types = {h["mdev_type"] for h in t4["regions"][0]["attach_handles"]}
    assert types == {"nvidia-223"}


def test_sriov_vf_parents_are_reported_under_their_pf(root):
    devices = {d["pci_address"]: d for d in _driver(root).discover()}

    assert "0000:41:00.4" not in devices
    a100 = devices["0000:41:00.0"]
    assert a100["regions"][0]["attach_handles"] == [
        {"type": "MDEV", "pci_address": "0000:41:00.4",
         "mdev_type": "nvidia-471"}]


def test_create_mdev_writes_the_uuid_to_create(root):
    mdev = str(uuid.uuid4())

    result = _driver(root).create_mdev(T4, "nvidia-222", mdev)

    assert result == {"created": True}
    with open(os.path.join(root, TYPES, "nvidia-222", "create")) as handle:
        assert handle.read() == mdev


def test_create_existing_mdev_is_a_no_op(root):
    mdev = str(uuid.uuid4())
    os.makedirs(os.path.join(root, "sys", "bus", "mdev", "devices", mdev))

    assert _driver(root).create_mdev(T4, "nvidia-222", mdev) == {
        "created": False}


def test_create_unknown_type_lists_the_supported_ones(root):
    with pytest.raises(exception.MdevError,
                       match="nvidia-999 is not supported here "
                             r"\(supported: nvidia-222, nvidia-223\)"):
        _driver(root).create_mdev(T4, "nvidia-999", str(uuid.uuid4()))


def test_create_without_available_instances_fails(root):
    with open(os.path.join(root, TYPES, "nvidia-223",
                           "available_instances"), "w") as handle:
        handle.write("0\n")

    with pytest.raises(exception.MdevError, match="no nvidia-223 instance"):
        _driver(root).create_mdev(T4, "nvidia-223", str(uuid.uuid4()))


def test_create_with_a_bad_uuid_fails(root):
    with pytest.raises(exception.MdevError, match="not a UUID"):
        _driver(root).create_mdev(T4, "nvidia-222", "vgpu-1")


def test_create_on_a_non_parent_fails(root):
    with pytest.raises(exception.MdevError, match="not an mdev parent"):
        _driver(root).create_mdev("0000:01:00.0", "nvidia-222",
                                  str(uuid.uuid4()))


def test_remove_mdev_writes_1_to_remove_and_is_idempotent(root):
    mdev = str(uuid.uuid4())
    mdev_dir = os.path.join(root, "sys", "bus", "mdev", "devices", mdev)
    os.makedirs(mdev_dir)
    driver = _driver(root)

    assert driver.remove_mdev(T4, mdev) == {"removed": True}
    with open(os.path.join(mdev_dir, "remove")) as handle:
        assert handle.read() == "1"
    os.unlink(os.path.join(mdev_dir, "remove"))
    os.rmdir(mdev_dir)
    assert driver.remove_mdev(T4, mdev) == {"removed": False}


def test_sysfs_write_error_names_the_file(root):
    create = os.path.join(root, TYPES, "nvidia-222", "create")
    os.unlink(create)
    os.mkdir(create)

    with pytest.raises(exception.SysfsError, match="create"):
        _driver(root).create_mdev(T4, "nvidia-222", str(uuid.uuid4()))


def test_gpus_cannot_be_programmed(root):
    driver = _driver(root)
    assert driver.current_function(base.Region(T4, "0")) == base.reading(None)
    with pytest.raises(exception.NotSupported, match="nvidia_mdev cannot"):
        driver.program(base.Region(T4, "0"), "/i/x", "x")
