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

"""xilinx_xrt: ``xbmgmt examine``/``program`` against recorded output."""

import pytest

from cyborg_lite.agent import exception
from cyborg_lite.agent.drivers import base
from cyborg_lite.agent.drivers import xilinx_xrt
from tests.unit.cyborg_lite.agent.conftest import copy_sysfs
from tests.unit.cyborg_lite.agent.conftest import fake_tool
from tests.unit.cyborg_lite.agent.conftest import make_conf
from tests.unit.cyborg_lite.agent.conftest import read_calls

U250 = "0000:d8:00.0"


@pytest.fixture
def root(tmp_path):
    return copy_sysfs("sysfs_xrt", tmp_path)


def _driver(root, tool):
    return xilinx_xrt.XilinxXrtDriver(make_conf(sysfs_root=root,
                                                xbmgmt_path=tool))


def _examine_tool(tmp_path, **kwargs):
    return fake_tool(tmp_path, "xbmgmt", stdout_file="xbmgmt_examine.txt",
                     **kwargs)


def test_discover_parses_xbmgmt_examine(root, tmp_path):
    tool, calls = _examine_tool(tmp_path)

    devices = _driver(root, tool).discover()

    assert read_calls(calls) == [["examine"]]
    assert [d["pci_address"] for d in devices] == ["0000:3b:00.0", U250]
    u250 = devices[1]
    assert u250["model"] == "xilinx_u250_gen3x16_xdma_shell_4_1"
    assert (u250["vendor_id"], u250["product_id"]) == ("0x10ee", "0x5004")
    assert u250["program_mode"] == "single"
    assert u250["regions"][0]["attach_handles"] == [
        {"type": "PCI", "pci_address": "0000:d8:00.1"}]
    assert u250["regions"][0]["function_id"] == (
        "8b5a8cd5-4f2e-4e3c-9d4f-2c3e5b1f7a10")
    # An all-zero xclbin UUID means nothing is loaded.
    assert devices[0]["regions"][0]["function_id"] is None


def _xclbin(tmp_path):
    image = tmp_path / "k.xclbin"
    image.write_bytes(b"xclbin2")
    return str(image)


def test_program_user_region(root, tmp_path):
    tool, calls = _examine_tool(tmp_path)
    image = _xclbin(tmp_path)

    _driver(root, tool).program(base.Region(U250, "0"), image, "k")

    assert read_calls(calls)[-1] == ["program", "--device", U250, "--user",
                                     image]


def test_program_base_region_flashes_an_installed_partition(root,
                                                             tmp_path):
    """``xbmgmt program --base --image`` takes the name of an installed
    shell partition, not a file path."""
    tool, calls = _examine_tool(tmp_path)
    shell = "xilinx_u250_gen3x16_xdma_shell_4_1"

    _driver(root, tool).program(base.Region(U250, "base"), "/i/shell.xsabin",
                                shell)

    assert read_calls(calls)[-1] == ["program", "--device", U250, "--base",
                                     "--image", shell]
    with pytest.raises(exception.InvalidRequest) as info:
        _driver(root, tool).program(base.Region(U250, "base"),
                                    "/i/shell.xsabin", None)
    assert "partition" in str(info.value)


def test_program_failure_names_tool_exit_code_and_stderr(root, tmp_path):
    # examine succeeds (stdout replayed), program fails like the recording.
    action = """
if argv[0] == "program":
    sys.stderr.write(open({fail!r}).read())
    sys.exit(1)
"""
    from tests.unit.cyborg_lite.agent.conftest import DATA
    tool, _ = _examine_tool(tmp_path, action=action.format(
        fail=f"{DATA}/tools/xbmgmt_program_fail.txt"))

    with pytest.raises(exception.ToolFailed) as info:
        _driver(root, tool).program(base.Region(U250, "0"),
                                    _xclbin(tmp_path), "k")

    message = str(info.value)
    assert "xbmgmt program --device 0000:d8:00.0" in message
    assert "exit code 1" in message
    assert "isn't compatible with the installed platform" in message


def test_unknown_card_or_region_is_region_not_found(root, tmp_path):
    tool, _ = _examine_tool(tmp_path)
    driver = _driver(root, tool)

    with pytest.raises(exception.RegionNotFound):
        driver.current_function(base.Region("0000:01:00.0", "0"))
    with pytest.raises(exception.RegionNotFound):
        driver.current_function(base.Region(U250, "1"))


def test_reset_runs_xbmgmt_reset(root, tmp_path):
    tool, calls = _examine_tool(tmp_path)

    _driver(root, tool).reset(base.Region(U250, "0"))

    assert read_calls(calls)[-1] == ["reset", "--device", U250, "--force"]


def test_a_shell_partition_that_is_a_path_never_crosses(root, tmp_path):
    tool, calls = _examine_tool(tmp_path)

    with pytest.raises(exception.InvalidRequest, match="partition"):
        _driver(root, tool).program(base.Region(U250, "base"), None,
                                    "../../etc/shadow")
    assert [c[0] for c in read_calls(calls)] == ["examine"]


def test_missing_xbmgmt_is_a_clear_error(root, tmp_path):
    with pytest.raises(exception.ToolNotFound, match="xbmgmt"):
        _driver(root, str(tmp_path / "xbmgmt")).discover()
