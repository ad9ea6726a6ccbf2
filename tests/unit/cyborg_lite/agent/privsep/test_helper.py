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

"""A privsep daemon that cannot start is reported as that: the error names
the helper command and why it failed, never the sysfs file or vendor tool
the call was about, and nothing is done."""

import os
import sys

from oslo_config import cfg
from oslo_privsep import priv_context
import pytest

from cyborg_lite.agent import exception
from cyborg_lite.agent import privsep
from cyborg_lite.agent.drivers import base
from cyborg_lite.agent.drivers import intel_opae
from cyborg_lite.agent.drivers import nvidia_mdev
from tests.unit.cyborg_lite.agent.conftest import copy_sysfs
from tests.unit.cyborg_lite.agent.conftest import fake_tool
from tests.unit.cyborg_lite.agent.conftest import make_conf
from tests.unit.cyborg_lite.agent.conftest import read_calls

T4 = "0000:af:00.0"
VGPU = "8a4ed4b0-6a3e-4d37-93d5-7a3c1dd1f5b6"


@pytest.fixture
def helper_command():
    """Stop the session's forked daemon; the test sets ``helper_command``
    (the daemon then starts the way the agent starts it, by running the
    helper). The forked daemon is back afterwards."""
    context = privsep.sys_admin_pctxt
    context.stop()

    def configure(command):
        cfg.CONF.set_override("helper_command", command,
                              group=privsep.CFG_SECTION)

    yield configure
    context.stop()
    cfg.CONF.clear_override("helper_command", group=privsep.CFG_SECTION)
    context.start(priv_context.Method.FORK)


def test_a_missing_helper_is_named_not_the_sysfs_file(helper_command,
                                                      tmp_path):
    root = copy_sysfs("sysfs_nvidia", tmp_path)
    helper_command(f"{tmp_path}/bin/sudo privsep-helper --config-file "
                   f"/etc/cyborg_lite/agent.conf")
    driver = nvidia_mdev.NvidiaMdevDriver(make_conf(sysfs_root=root))

    with pytest.raises(exception.HelperNotStarted) as info:
        driver.create_mdev(T4, "nvidia-222", VGPU)

    message = str(info.value)
    assert (f"{tmp_path}/bin/sudo privsep-helper --config-file "
            f"/etc/cyborg_lite/agent.conf") in message
    assert f"{tmp_path}/bin/sudo: No such file or directory" in message
    assert "/sys/" not in message and "Cannot use" not in message
    assert info.value.code == "agent.helper_not_started"
    create = os.path.join(root, "sys", "class", "mdev_bus", T4,
                          "mdev_supported_types", "nvidia-222", "create")
    assert not os.path.exists(create) or open(create).read() == ""


def test_sudo_refusing_is_named_not_the_vendor_tool(helper_command,
                                                    tmp_path):
    sudo, sudo_calls = fake_tool(tmp_path, "sudo", exit_code=1, action="""
sys.stderr.write("sudo: a password is required\\n")
""")
    helper_command(f"{sudo} privsep-helper")
    fpgaconf, fpgaconf_calls = fake_tool(tmp_path, "fpgaconf")
    (tmp_path / "x.gbs").write_bytes(b"gbs")
    root = copy_sysfs("sysfs_opae", tmp_path)
    driver = intel_opae.IntelOpaeDriver(make_conf(
        sysfs_root=root, fpgaconf_path=fpgaconf,
        image_catalog_dir=str(tmp_path)))

    with pytest.raises(exception.HelperNotStarted) as info:
        driver.program(base.Region("0000:5e:00.0", "0"),
                       str(tmp_path / "x.gbs"), None)

    message = str(info.value)
    assert f"{sudo} privsep-helper" in message
    assert "exited non-zero (1)" in message
    assert "privsep log" in message
    assert "fpgaconf" not in message
    assert read_calls(sudo_calls)[0][0] == "privsep-helper"
    assert read_calls(fpgaconf_calls) == []


def test_the_next_call_after_a_fixed_helper_command_works(helper_command,
                                                          tmp_path):
    root = copy_sysfs("sysfs_nvidia", tmp_path)
    helper_command(str(tmp_path / "missing-helper"))
    driver = nvidia_mdev.NvidiaMdevDriver(make_conf(sysfs_root=root))
    with pytest.raises(exception.HelperNotStarted):
        driver.create_mdev(T4, "nvidia-222", VGPU)

    config = tmp_path / "agent.conf"
    config.write_text(f"[{privsep.CFG_SECTION}]\ncapabilities =\n")
    helper = os.path.join(os.path.dirname(sys.executable), "privsep-helper")
    helper_command(f"{helper} --config-file {config}")

    assert driver.create_mdev(T4, "nvidia-222", VGPU) == {"created": True}
    create = os.path.join(root, "sys", "class", "mdev_bus", T4,
                          "mdev_supported_types", "nvidia-222", "create")
    with open(create) as created:
        assert created.read() == VGPU
