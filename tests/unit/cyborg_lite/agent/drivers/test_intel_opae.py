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

"""intel_opae: sysfs discovery and ``fpgaconf`` against a fake sysfs tree
and a stand-in tool replaying recorded output."""

import os

import pytest

from cyborg_lite.agent import exception
from cyborg_lite.agent.drivers import base
from cyborg_lite.agent.drivers import intel_opae
from tests.unit.cyborg_lite.agent.conftest import copy_sysfs
from tests.unit.cyborg_lite.agent.conftest import fake_tool
from tests.unit.cyborg_lite.agent.conftest import make_conf
from tests.unit.cyborg_lite.agent.conftest import read_calls

DFL_PORT = os.path.join("sys", "class", "fpga_region", "region0",
                        "dfl-port.0", "afu_id")

# The fake fpgaconf "programs" like the real one ends up doing: the AFU id
# of the loaded image shows up in the port's afu_id.
_PROGRAM = """
root = {root!r}
with open(argv[-1]) as image:
    afu = image.read().strip()
with open(root + "/" + {port!r}, "w") as port:
    port.write(afu + "\\n")
"""


@pytest.fixture
def root(tmp_path):
    return copy_sysfs("sysfs_opae", tmp_path)


def _driver(root, tool="fpgaconf"):
    return intel_opae.IntelOpaeDriver(make_conf(sysfs_root=root,
                                                fpgaconf_path=tool))


def test_discover_reads_dfl_and_legacy_layouts(root):
    devices = _driver(root).discover()

    by_address = {d["pci_address"]: d for d in devices}
    assert sorted(by_address) == ["0000:5e:00.0", "0000:be:00.0"]
    dfl = by_address["0000:5e:00.0"]
    assert (dfl["vendor_id"], dfl["product_id"]) == ("0x8086", "0x0b30")
    assert dfl["regions"] == [{
        "id": "0", "state": "ready",
        "function_id": "d8424dc4-a4a3-c413-f89e-433683f9040b",
        # SR-IOV is on: the port is used through its VF.
        "attach_handles": [{"type": "PCI", "pci_address": "0000:5e:00.1"}]}]
    legacy = by_address["0000:be:00.0"]
    assert legacy["regions"][0]["function_id"] == (
        "9aeffe5f-8457-0612-c72e-93b48f8a0d7f")
    # No VFs: the PF itself is the attach handle.
    assert legacy["regions"][0]["attach_handles"] == [
        {"type": "PCI", "pci_address": "0000:be:00.0"}]


def test_discover_on_a_host_without_fpgas_is_empty(tmp_path):
    assert _driver(str(tmp_path)).discover() == []


def test_current_function_reads_afu_id(root):
    reading = _driver(root).current_function(base.Region("0000:5e:00.0",
                                                         "0"))
    assert reading == base.reading("d8424dc4-a4a3-c413-f89e-433683f9040b")


def test_current_function_of_unknown_port_is_region_not_found(root):
    with pytest.raises(exception.RegionNotFound):
        _driver(root).current_function(base.Region("0000:5e:00.0", "3"))


def test_program_runs_fpgaconf_with_the_pf_bdf(root, tmp_path):
    tool, calls = fake_tool(tmp_path, "fpgaconf",
                            action=_PROGRAM.format(root=root, port=DFL_PORT))
    image = tmp_path / "nlb3.gbs"
    image.write_text("f7df405c-bd7a-cf72-22f1-44b0b93acd18")
    driver = _driver(root, tool)
    region = base.Region("0000:5e:00.0", "0")

    driver.program(region, str(image), "f7df405c-bd7a-cf72-22f1-44b0b93acd18")

    assert read_calls(calls) == [[
        "--bus", "0x5e", "--device", "0x00", "--function", "0x0",
        str(image)]]
    assert driver.current_function(region)["function_id"] == (
        "f7df405c-bd7a-cf72-22f1-44b0b93acd18")


def test_fpgaconf_failure_names_tool_exit_code_and_stderr(root, tmp_path):
    tool, _ = fake_tool(tmp_path, "fpgaconf", stderr_file="fpgaconf_fail.txt",
                        exit_code=1)
    (tmp_path / "x.gbs").write_bytes(b"gbs")

    with pytest.raises(exception.ToolFailed) as info:
        _driver(root, tool).program(base.Region("0000:5e:00.0", "0"),
                                    str(tmp_path / "x.gbs"), None)

    message = str(info.value)
    assert "fpgaconf" in message and "exit code 1" in message
    assert "No suitable slots found" in message


def test_missing_fpgaconf_is_a_clear_error(root, tmp_path):
    (tmp_path / "x.gbs").write_bytes(b"gbs")
    with pytest.raises(exception.ToolNotFound, match="not-installed"):
        _driver(root, str(tmp_path / "not-installed")).program(
            base.Region("0000:5e:00.0", "0"), str(tmp_path / "x.gbs"), None)


def test_an_image_outside_the_image_directories_never_crosses(root,
                                                              tmp_path):
    tool, calls = fake_tool(tmp_path, "fpgaconf")
    conf = make_conf(sysfs_root=root, fpgaconf_path=tool,
                     image_catalog_dir=str(tmp_path / "catalog"),
                     image_cache_dir=str(tmp_path / "cache"))
    elsewhere = tmp_path / "nlb3.gbs"
    elsewhere.write_bytes(b"gbs")

    with pytest.raises(exception.InvalidRequest, match="image directories"):
        intel_opae.IntelOpaeDriver(conf).program(
            base.Region("0000:5e:00.0", "0"), str(elsewhere), None)
    assert read_calls(calls) == []


def test_afu_id_to_uuid_keeps_other_ids():
    assert intel_opae.afu_id_to_uuid("NLB0") == "NLB0"
