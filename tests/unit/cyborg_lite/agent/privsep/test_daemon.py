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

"""The privileged functions as the agent calls them: through the privsep
daemon the agent tests fork (see the agent conftest), which checks again
what an agent could send without its own checks."""

import os

import pytest

from cyborg_lite.agent.privsep import fpga
from cyborg_lite.agent.privsep import mdev
from tests.unit.cyborg_lite.agent.conftest import copy_sysfs
from tests.unit.cyborg_lite.agent.conftest import fake_tool

PARENT = "0000:af:00.0"
TYPE = "nvidia-222"
UUID = "8a4ed4b0-6a3e-4d37-93d5-7a3c1dd1f5b6"


def test_the_tool_runs_in_the_daemon_not_the_agent(tmp_path):
    ran_from = tmp_path / "parent.pid"
    tool, _ = fake_tool(tmp_path, "fpgaconf", action=f"""
import os
open({str(ran_from)!r}, "w").write(str(os.getppid()))
""")
    image = tmp_path / "nlb0.gbs"
    image.write_bytes(b"gbs")

    exit_code, _out, _err = fpga.fpgaconf(tool, "0000:5e:00.0", str(image),
                                          [str(tmp_path)], 10)

    assert exit_code == 0
    assert int(ran_from.read_text()) != os.getpid()


def test_the_daemon_refuses_an_image_outside_the_directories(tmp_path):
    tool, calls = fake_tool(tmp_path, "fpgaconf")
    (tmp_path / "images").mkdir()

    with pytest.raises(ValueError, match="not under"):
        fpga.fpgaconf(tool, "0000:5e:00.0", "/etc/passwd",
                      [str(tmp_path / "images")], 10)
    assert not os.path.exists(calls)


def test_the_daemon_refuses_another_binary_as_the_tool(tmp_path):
    image = tmp_path / "k.xclbin"
    image.write_bytes(b"xclbin2")

    with pytest.raises(ValueError, match="not the xbmgmt tool"):
        fpga.xbmgmt_program_user("/bin/sh", "0000:d8:00.0", str(image),
                                 [str(tmp_path)], 10)


def test_the_daemon_creates_only_types_the_parent_lists(tmp_path):
    root = copy_sysfs("sysfs_nvidia", tmp_path)
    types = os.path.join(root, "sys", "class", "mdev_bus", PARENT,
                         "mdev_supported_types")
    listed = sorted(os.listdir(types))

    with pytest.raises(ValueError, match="is not one 0000:af:00.0 lists"):
        mdev.create_mdev(root, PARENT, "nvidia-999", UUID)
    with pytest.raises(ValueError, match="not a valid mdev type"):
        mdev.create_mdev(root, PARENT, "../../../../tmp", UUID)
    with pytest.raises(ValueError, match="not a UUID"):
        mdev.create_mdev(root, PARENT, listed[0], "1; rm -rf /")
    assert sorted(os.listdir(types)) == listed
