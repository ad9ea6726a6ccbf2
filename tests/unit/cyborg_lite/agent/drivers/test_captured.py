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

"""The drivers on real hardware's shapes: the project's fixtures
(``tests/data/drivers``, reproducing recordings of others), and the
recordings themselves when ``../shared/realdata/drivers`` is present."""

import glob

import pytest

from cyborg_lite.agent import exception
from cyborg_lite.agent.drivers import intel_opae
from cyborg_lite.agent.drivers import nvidia_mdev
from cyborg_lite.agent.drivers import xilinx_xrt
from tests.unit.cyborg_lite.agent.conftest import fake_tool
from tests.unit.cyborg_lite.agent.conftest import make_conf
from tests.unit.cyborg_lite.agent.drivers import captured

needs_realdata = pytest.mark.skipif(
    not captured.REALDATA.exists(),
    reason="the recordings of others (../shared/realdata) are not here")


def _nvidia(root, **overrides):
    return nvidia_mdev.NvidiaMdevDriver(make_conf(sysfs_root=root,
                                                  **overrides))


# --- nvidia_mdev ---------------------------------------------------------

def _p40_capacity(spec, tmp_path):
    devices = _nvidia(captured.build(tmp_path, spec)).discover()
    (p40,) = devices
    handles = p40["regions"][0]["attach_handles"]
    return p40, handles


def test_p40_offers_one_type_not_the_sum_of_all(tmp_path):
    """A P40 runs one vGPU type at a time: at most 24 vGPUs (nvidia-241),
    not the 63 the sum of its types would promise."""
    p40, handles = _p40_capacity(
        captured.load("mdev", "tesla-p40_mdevctl-issue-115.json"), tmp_path)
    assert p40["pci_address"] == "0000:02:00.0"
    assert len(handles) == 24
    assert {h["mdev_type"] for h in handles} == {"nvidia-241"}


@needs_realdata
def test_p40_recording(tmp_path):
    spec = captured.mdevctl_types(captured.realdata(
        "mdev", "mdevctl-types_tesla-p40_mdevctl-issue-115.txt"))
    _, handles = _p40_capacity(spec, tmp_path)
    assert len(handles) == 24


@pytest.mark.parametrize("name", ["gvt-g_skylake-igpu.json"])
def test_other_vendors_mdev_parents_are_not_nvidia_gpus(tmp_path, name):
    root = captured.build(tmp_path, captured.load("mdev", name))
    assert _nvidia(root).discover() == []


def test_ccw_and_foreign_pci_parents_are_left_alone(tmp_path):
    root = captured.build(tmp_path, captured.load(
        "mdev", "mdevctl-testdata-full.json"))
    devices = _nvidia(root).discover()
    assert [d["pci_address"] for d in devices] == ["0000:00:03.0"]
    types = {h["mdev_type"]
             for h in devices[0]["regions"][0]["attach_handles"]}
    assert types == {"nvidia-36"}  # the M10's type with the most instances


@needs_realdata
def test_mdevctl_testdata_recording(tmp_path):
    spec = captured.mdevctl_types(captured.realdata(
        "mdev", "mdevctl-types_mdevctl-testdata-types-full.text"))
    devices = _nvidia(captured.build(tmp_path, spec)).discover()
    assert [d["pci_address"] for d in devices] == ["0000:00:03.0"]


@needs_realdata
def test_gvt_g_recording(tmp_path):
    text = captured.realdata(
        "mdev", "gvt-g-types_intel-skylake-igpu_gvt-linux-issue-75.txt"
    ).read_text()
    types = {name: {"available_instances": {"i915-GVTg_V5_4": 1}.get(
        name, 2)} for name in ("i915-GVTg_V5_4", "i915-GVTg_V5_8")
        if name + "/" in text}
    assert len(types) == 2
    spec = {"pci": {"0000:00:02.0": {"vendor": "0x8086", "device": "0x1912",
                                     "class": "0x030000"}},
            "mdev_bus": {"0000:00:02.0": {"types": types}}}
    assert _nvidia(captured.build(tmp_path, spec)).discover() == []


def test_vgpu17_fails_clearly_naming_the_generation(tmp_path):
    root = captured.build(tmp_path, captured.load(
        "mdev", "vgpu17_rtx-pro-6000.json"))
    with pytest.raises(exception.UnsupportedDevice) as info:
        _nvidia(root).discover()
    message = str(info.value)
    assert "0001:c8:00.0" in message and "vGPU 17" in message
    assert "0001:c8:00.4" not in message  # VFs are not GPUs of their own


@needs_realdata
def test_vgpu17_recording(tmp_path):
    lspci = captured.realdata(
        "mdev", "vgpu17-vendor-vfio_rtx-pro-6000_cubecos-issue-312_lspci.txt"
    ).read_text()
    vfs = [line.split()[0] for line in lspci.splitlines()
           if "[10de:2bb5]" in line]
    assert vfs
    pf = "0001:c8:00.0"
    spec = {"pci": {pf: {"vendor": "0x10de", "device": "0x2bb5",
                         "class": "0x030200", "virtfn": vfs}}}
    for vf in vfs:
        spec["pci"][vf] = {"vendor": "0x10de", "device": "0x2bb5",
                           "class": "0x030200", "physfn": pf}
    with pytest.raises(exception.UnsupportedDevice):
        _nvidia(captured.build(tmp_path, spec)).discover()


# --- intel_opae ----------------------------------------------------------

def _opae(root):
    return intel_opae.IntelOpaeDriver(make_conf(sysfs_root=root))


def test_a_port_released_to_a_vf_is_a_region_of_the_pf(tmp_path):
    root = captured.build(tmp_path, captured.load(
        "opae", "tmp-1socket-nlb0-vf.json"))
    (card,) = _opae(root).discover()
    assert (card["pci_address"], card["product_id"]) == ("0000:5e:00.0",
                                                          "0xbcc0")
    (region,) = card["regions"]
    assert region["id"] == "1"
    assert region["function_id"] == "d8424dc4-a4a3-c413-f89e-433683f9040b"
    assert region["attach_handles"] == [{"type": "PCI",
                                         "pci_address": "0000:5e:00.1"}]


def test_dfl_n3000(tmp_path):
    root = captured.build(tmp_path, captured.load("opae",
                                                  "dfl_n3000_nlb0.json"))
    (card,) = _opae(root).discover()
    assert card["pci_address"] == "0000:05:00.0"
    assert card["regions"][0]["function_id"] == (
        "9aeffe5f-8457-0612-c000-c9660d824272")


@needs_realdata
@pytest.mark.parametrize("archive", sorted(
    glob.glob(str(captured.REALDATA / "opae" / "*.tar.gz"))) or ["none"])
def test_every_opae_recording_gives_cards_on_pfs(tmp_path, archive):
    root = captured.unpack_opae(archive, tmp_path)
    devices = _opae(root).discover()
    assert devices, archive
    sysfs = intel_opae._host.Sysfs(root)
    for device in devices:
        # never a VF as a card of its own
        assert sysfs.physical_function(device["pci_address"]) is None
        for region in device["regions"]:
            assert region["attach_handles"]
    if archive.endswith("1socket-nlb0-vf.tar.gz"):
        assert [d["pci_address"] for d in devices] == ["0000:5e:00.0"]
        assert devices[0]["regions"][0]["attach_handles"][0][
            "pci_address"] == "0000:5e:00.1"


# --- xilinx_xrt ----------------------------------------------------------

XRT = {
    "xbmgmt-examine_2.11_u50-golden.txt": [
        ("0000:17:00.0", "xilinx_u50_GOLDEN_9", False)],
    "xbmgmt-examine_2.12_u200.txt": [
        ("0000:17:00.0", "xilinx_u200_gen3x16_xdma_base_1", True)],
    "xbmgmt-examine_2.13_u280-u250golden.txt": [
        ("0000:65:00.0", "xilinx_u280_xdma_201920_3", True),
        ("0000:17:00.0", "xilinx_u250_GOLDEN_5", False)],
    "xbmgmt-examine_2.13_ready-column.txt": [
        ("0000:65:00.0", "xilinx_u280_xdma_201920_3", True),
        ("0000:17:00.0", "xilinx_u250_GOLDEN_5", False)],
    "xbmgmt-examine_2.14_no-devices.txt": [],
}

REAL_XRT = {
    "xbmgmt-examine_xrt-2.11.0_u50-golden_XRT-issue-7691.txt":
        "xbmgmt-examine_2.11_u50-golden.txt",
    "xbmgmt-examine_xrt-2.12.0_u200_XRT-pr-5683.txt":
        "xbmgmt-examine_2.12_u200.txt",
    "xbmgmt-examine_xrt-2.13.0_u280-u250golden_XRT-pr-6443.txt":
        "xbmgmt-examine_2.13_u280-u250golden.txt",
    "xbmgmt-examine_xrt-2.13.0_ready-column_XRT-pr-6423.txt":
        "xbmgmt-examine_2.13_ready-column.txt",
    "xbmgmt-examine_xrt-2.14.354_no-devices_XRT-issue-7562.txt":
        "xbmgmt-examine_2.14_no-devices.txt",
}


@pytest.mark.parametrize("name", sorted(XRT))
def test_xbmgmt_examine_formats(name):
    text = captured.fixture("xrt", name).read_text()
    assert xilinx_xrt.parse_examine(text) == XRT[name]


@needs_realdata
@pytest.mark.parametrize("name", sorted(REAL_XRT))
def test_xbmgmt_examine_recordings(name):
    text = captured.xbmgmt_output(captured.realdata("xrt", name))
    assert xilinx_xrt.parse_examine(text) == XRT[REAL_XRT[name]]


def test_golden_cards_are_not_offered(tmp_path):
    (tmp_path / "tools").mkdir()
    source = captured.fixture("xrt", "xbmgmt-examine_2.13_ready-column.txt")
    tool, _ = fake_tool(tmp_path, "xbmgmt",
                        action=f"print(open({str(source)!r}).read())")
    driver = xilinx_xrt.XilinxXrtDriver(make_conf(
        sysfs_root=str(tmp_path), xbmgmt_path=tool))
    devices = driver.discover()
    assert [d["pci_address"] for d in devices] == ["0000:65:00.0"]
    assert devices[0]["regions"][0]["attach_handles"] == [
        {"type": "PCI", "pci_address": "0000:65:00.1"}]


def test_an_unknown_format_names_the_tool_and_version():
    text = captured.fixture("xrt",
                            "xbmgmt-examine_unknown-format.txt").read_text()
    with pytest.raises(exception.UnknownToolOutput) as info:
        xilinx_xrt.parse_examine(text)
    assert "xbmgmt examine (3.0.1)" in str(info.value)


@needs_realdata
def test_m60_parents_recording(tmp_path):
    """Nova's documentation lists the mdev types of four M60 parents (no
    instance counts): each is one GPU."""
    text = captured.realdata(
        "mdev", "ls-mdev_bus_tesla-m60_nova-doc-virtual-gpu.txt").read_text()
    spec = {"pci": {}, "mdev_bus": {}}
    parent = None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("/sys/class/mdev_bus/"):
            parent = line.split("/")[4]
            spec["pci"][parent] = {"vendor": "0x10de", "device": "0x13f2",
                                   "class": "0x030000"}
        elif parent and line.startswith("nvidia-"):
            spec["mdev_bus"][parent] = {"types": {
                name: {} for name in line.split()}}
            parent = None
    devices = _nvidia(captured.build(tmp_path, spec)).discover()
    assert [d["pci_address"] for d in devices] == [
        "0000:84:00.0", "0000:85:00.0", "0000:86:00.0", "0000:87:00.0"]
