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

"""Drivers are found by name through stevedore (cyborg_lite.drivers)."""

import pytest

from cyborg_lite.agent import drivers
from cyborg_lite.agent import exception
from cyborg_lite.agent.drivers import base
from tests.unit.cyborg_lite.agent.conftest import make_conf


def test_all_five_drivers_are_installed():
    assert drivers.available() == ["intel_opae", "nvidia_mdev", "pci",
                                   "sim", "xilinx_xrt"]


def test_enabled_drivers_load_in_order(tmp_path):
    conf = make_conf(enabled_drivers=["nvidia_mdev", "sim"],
                     sim_state_dir=str(tmp_path), sysfs_root=str(tmp_path))

    loaded = drivers.load_enabled(conf)

    assert list(loaded) == ["nvidia_mdev", "sim"]
    assert all(isinstance(d, base.AcceleratorDriver)
               for d in loaded.values())
    assert [d.name for d in loaded.values()] == ["nvidia_mdev", "sim"]


def test_unknown_driver_names_the_installed_ones():
    conf = make_conf(enabled_drivers=["fake_driver"])

    with pytest.raises(exception.DriverNotFound,
                       match="'fake_driver' is not installed .*intel_opae, "
                             "nvidia_mdev, pci, sim, xilinx_xrt"):
        drivers.load_enabled(conf)
