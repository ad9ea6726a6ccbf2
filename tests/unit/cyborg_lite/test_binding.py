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


"""Pure parts of binding: the programming decision and handle info."""

import types

import pytest

from cyborg_lite import binding


def _deployable(function_id=None, bitstream_id=None):
    return types.SimpleNamespace(function_id=function_id,
                                 bitstream_id=bitstream_id)


def _handle(pci="0000:5E:00.1", kind="PCI", mdev_type="", physnet=None):
    return types.SimpleNamespace(pci_address=pci, type=kind,
                                 mdev_type=mdev_type, uuid="h-uuid",
                                 physical_network=physnet)


def test_group_asking_nothing_binds_instantly():
    assert binding.needs_programming({"resources:FPGA": "1"},
                                     _deployable("gzip")) is None


def test_group_asking_what_the_region_runs_binds_instantly():
    group = {"resources:FPGA": "1", "accel:function_id": "gzip"}
    assert binding.needs_programming(group, _deployable("gzip")) is None
    group = {"resources:FPGA": "1", "accel:bitstream_id": "img-1"}
    assert binding.needs_programming(
        group, _deployable(bitstream_id="img-1")) is None


@pytest.mark.parametrize("group, deployable, expected", [
    ({"accel:function_id": "gzip"}, _deployable(None),
     ("accel:function_id", "gzip")),
    ({"accel:function_id": "gzip"}, _deployable("aes"),
     ("accel:function_id", "gzip")),
    ({"accel:bitstream_id": "img-2"}, _deployable(bitstream_id="img-1"),
     ("accel:bitstream_id", "img-2")),
])
def test_group_asking_something_else_needs_programming(group, deployable,
                                                       expected):
    assert binding.needs_programming(group, deployable) == expected


def test_pci_handle_info_is_strings_as_libvirt_reads_them():
    assert binding.attach_handle_info(_handle()) == {
        "domain": "0000", "bus": "5e", "device": "00", "function": "1"}


def test_mdev_handle_info_has_asked_type():
    info = binding.attach_handle_info(_handle(kind="MDEV",
                                              mdev_type="nvidia-222"))
    assert info["asked_type"] == "nvidia-222"
    assert (info["bus"], info["device"], info["function"]) == ("5e", "00",
                                                               "1")


def test_nic_handle_info_has_physical_network():
    info = binding.attach_handle_info(_handle(physnet="physnet1"))
    assert info["physical_network"] == "physnet1"
