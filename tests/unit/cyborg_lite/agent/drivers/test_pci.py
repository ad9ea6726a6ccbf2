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

"""The ``pci`` driver on hosts others recorded (tests/data/drivers/pci):
whole GPUs, NIC VFs with their physnet and QAT VFs become attach handles of
the PF Ironic knows, and nothing the host uses is ever offered."""

import json
import logging
import os

import pytest

from cyborg_lite.agent import drivers
from cyborg_lite.agent import exception
from cyborg_lite.agent.drivers import base
from cyborg_lite.agent.drivers import pci
from tests.unit.cyborg_lite.agent.conftest import make_conf
from tests.unit.cyborg_lite.agent.drivers import pci_host


def _driver(root, specs, mappings=()):
    conf = make_conf(sysfs_root=str(root), enabled_drivers=["pci"])
    conf.set_override("device_spec", [json.dumps(s) for s in specs],
                      group="pci")
    conf.set_override("physical_device_mappings", list(mappings),
                      group="pci")
    return pci.PciDriver(conf)


def _host(tmp_path, recording, specs, mappings=(), variants=()):
    root = pci_host.render(recording, tmp_path / "host", variants)
    return _driver(root, specs, mappings)


def _handles(devices):
    return {d["pci_address"]: [(h["pci_address"], h.get("physical_network"))
                               for r in d["regions"]
                               for h in r["attach_handles"]]
            for d in devices}


def _warnings(caplog):
    return [r.getMessage() for r in caplog.records
            if r.name == pci.__name__ and r.levelno >= logging.WARNING]


def test_discover_h100_on_vfio_pci_is_one_whole_gpu(tmp_path):
    driver = _host(tmp_path, pci_host.H100, [{"vendor_id": "10de"}])

    devices = driver.discover()

    assert devices == [{
        "type": "GPU", "vendor_id": "0x10de", "product_id": "0x2331",
        "pci_address": "0000:41:00.0", "program_mode": "single",
        "regions": [{"id": "0", "function_id": None, "state": base.READY,
                     "attach_handles": [{"type": "PCI",
                                         "pci_address": "0000:41:00.0"}]}],
    }]


def test_discover_t4s_one_device_each(tmp_path):
    driver = _host(tmp_path, pci_host.T4,
                   [{"vendor_id": "10de", "product_id": "1eb8"}])

    handles = _handles(driver.discover())

    assert handles == {bdf: [(bdf, None)] for bdf in (
        "0000:18:00.0", "0000:19:00.0", "0000:35:00.0", "0000:36:00.0",
        "0000:e7:00.0")}


def test_discover_boot_vga_refused_with_one_log_line(tmp_path, caplog):
    driver = _host(tmp_path, pci_host.T4, [{"product_id": "1eb8"}],
                   variants=["t4-boot-vga"])

    handles = _handles(driver.discover())

    assert "0000:18:00.0" not in handles and len(handles) == 4
    assert _warnings(caplog) == [
        'PCI function 0000:18:00.0 matches [pci] device_spec '
        '{"product_id": "1eb8"} but is not handed over: it is the boot VGA '
        "device (the host's console runs on it)"]


def test_discover_gpu_on_host_driver_refused(tmp_path, caplog):
    driver = _host(tmp_path, pci_host.T4, [{"product_id": "1eb8"}],
                   variants=["t4-on-nvidia"])

    handles = _handles(driver.discover())

    assert "0000:19:00.0" not in handles and len(handles) == 4
    [line] = _warnings(caplog)
    assert line.startswith("PCI function 0000:19:00.0 matches")
    assert line.endswith("it is a GPU bound to the host driver nvidia; bind "
                         "it to vfio-pci to hand it over")


def test_discover_connectx5_vfs_with_mapped_physnets(tmp_path, caplog):
    caplog.set_level(logging.INFO)
    driver = _host(tmp_path, pci_host.CONNECTX5, [{"vendor_id": "15b3"}],
                   mappings=["physnet1:ens41f0np0", "physnet2:ens41f1np1"])

    devices = driver.discover()

    assert [(d["type"], d["product_id"]) for d in devices] == [
        ("NIC", "0x1017"), ("NIC", "0x1017")]
    assert _handles(devices) == {
        "0000:5f:00.0": [(f"0000:5f:00.{f}", "physnet1") for f in (2, 3, 4)],
        "0000:5f:00.1": [(f"0000:5f:00.{f}", "physnet2") for f in (5, 6, 7)],
    }
    # The PFs run their VFs: never handed over themselves, and no warning.
    assert _warnings(caplog) == []
    assert "0000:5f:00.0 matches" in caplog.text


def test_discover_connectx5_vf_with_up_netdev_refused(tmp_path, caplog):
    driver = _host(tmp_path, pci_host.CONNECTX5,
                   [{"vendor_id": "15b3", "product_id": "1018",
                     "physical_network": "physnet1"}],
                   variants=["connectx5-vf-up"])

    handles = _handles(driver.discover())

    assert [a for a, _ in handles["0000:5f:00.0"]] == [
        "0000:5f:00.2", "0000:5f:00.4"]
    [line] = _warnings(caplog)
    assert "0000:5f:00.3" in line
    assert "its netdev ens41f0v1 is up" in line


def test_discover_pf_with_vfs_never_whole(tmp_path, caplog):
    driver = _host(tmp_path, pci_host.CONNECTX5,
                   [{"product_id": "1017", "physical_network": "physnet1"}])

    assert driver.discover() == []
    assert len(_warnings(caplog)) == 2
    assert ("0000:5f:00.0 matches [pci] device_spec {\"physical_network\": "
            "\"physnet1\", \"product_id\": \"1017\"} but is not handed "
            "over: it is a PF with 3 VF(s) enabled and no spec matches its "
            "VFs") in _warnings(caplog)[0]


def test_discover_connectx5_by_pf_devname(tmp_path):
    driver = _host(tmp_path, pci_host.CONNECTX5,
                   [{"devname": "ens41f1np1", "physical_network": "tenant"}])

    assert _handles(driver.discover()) == {
        "0000:5f:00.1": [(f"0000:5f:00.{f}", "tenant") for f in (5, 6, 7)]}


def test_discover_xxv710_vfs_by_pf_address(tmp_path):
    driver = _host(tmp_path, pci_host.XXV710, [
        {"address": "0000:18:00.0", "physical_network": "physnet1"},
        {"address": "0000:18:00.1", "physical_network": "physnet2"}])

    handles = _handles(driver.discover())

    assert handles["0000:18:00.0"] == [
        (f"0000:18:02.{f}", "physnet1") for f in range(8)]
    assert handles["0000:18:00.1"] == [
        ("0000:18:0a.0", "physnet2"), ("0000:18:0a.1", "physnet2")]


def test_discover_nic_vfs_without_physnet_refused_one_line(tmp_path,
                                                          caplog):
    driver = _host(tmp_path, pci_host.XXV710, [
        {"address": "0000:18:00.0", "physical_network": "physnet1"},
        {"address": "0000:18:00.1"}])

    handles = _handles(driver.discover())

    assert list(handles) == ["0000:18:00.0"]
    [line] = _warnings(caplog)
    assert line.startswith("PCI function(s) 0000:18:0a.0, 0000:18:0a.1 of "
                           "NIC 0000:18:00.1 match")
    assert "no physical network" in line


def test_discover_c62x_qat_vfs(tmp_path):
    driver = _host(tmp_path, pci_host.C62X,
                   [{"vendor_id": "8086", "product_id": "37c9"}])

    devices = driver.discover()

    assert [(d["pci_address"], d["type"], d["product_id"])
            for d in devices] == [("0000:3d:00.0", "QAT", "0x37c8"),
                                  ("0000:3f:00.0", "QAT", "0x37c8")]
    handles = _handles(devices)
    assert len(handles["0000:3d:00.0"]) == 16
    assert len(handles["0000:3f:00.0"]) == 14
    assert handles["0000:3d:00.0"][0] == ("0000:3d:01.0", None)


def test_discover_401xx_qat_vfs_start_in_pf_slot(tmp_path):
    driver = _host(tmp_path, pci_host.QAT_401XX,
                   [{"vendor_id": "8086", "product_id": "4943",
                     "resource_class": "CUSTOM_QAT_VF",
                     "traits": "qat-gen4"}])

    devices = driver.discover()

    handles = _handles(devices)
    assert [a for a, _ in handles["0000:f3:00.0"]][:2] == [
        "0000:f3:00.1", "0000:f3:00.2"]
    assert len(handles["0000:f3:00.0"]) == 16
    assert handles["0000:f7:00.0"] == [
        ("0000:f7:00.1", None), ("0000:f7:00.2", None),
        ("0000:f7:00.3", None)]
    assert {(d["type"], d["regions"][0]["resource_class"],
             tuple(d["regions"][0]["traits"])) for d in devices} == {
        ("QAT", "CUSTOM_QAT_VF", ("CUSTOM_QAT_GEN4",))}


def test_discover_spec_device_type_overrides_class(tmp_path):
    driver = _host(tmp_path, pci_host.H100,
                   [{"vendor_id": "10de", "device_type": "AICHIP"}])

    assert [d["type"] for d in driver.discover()] == ["AICHIP"]


def test_discover_malformed_spec_logged_others_kept(tmp_path, caplog):
    root = pci_host.render(pci_host.H100, tmp_path / "host")
    conf = make_conf(sysfs_root=root)
    conf.set_override("device_spec", ["{vendor_id: 10de", '{"bus": "41"}',
                                      '{"vendor_id": "10de"}'], group="pci")

    devices = pci.PciDriver(conf).discover()

    assert [d["pci_address"] for d in devices] == ["0000:41:00.0"]
    lines = _warnings(caplog)
    assert len(lines) == 2
    assert "'{vendor_id: 10de' is not JSON" in lines[0]
    assert 'device_spec {"bus": "41"} is ignored: unknown key(s) bus' in (
        lines[1])


def test_discover_spec_matching_nothing_logged(tmp_path, caplog):
    driver = _host(tmp_path, pci_host.H100, [
        {"vendor_id": "1002"}, {"devname": "ens9f0"}])

    assert driver.discover() == []
    assert sorted(_warnings(caplog)) == [
        '[pci] device_spec {"devname": "ens9f0"} matches nothing: no PCI '
        'function has the netdev ens9f0',
        '[pci] device_spec {"vendor_id": "1002"} matches no PCI function '
        'on this host']


def test_discover_problem_warned_once_while_it_lasts(tmp_path, caplog):
    driver = _host(tmp_path, pci_host.H100, [{"vendor_id": "1002"}])

    driver.discover()
    driver.discover()

    assert len(_warnings(caplog)) == 1


def test_discover_no_iommu_group_refused(tmp_path, caplog):
    root = pci_host.render(pci_host.H100, tmp_path / "host")
    os.unlink(os.path.join(root, "sys/bus/pci/devices/0000:41:00.0/"
                                 "iommu_group"))

    assert _driver(root, [{"vendor_id": "10de"}]).discover() == []
    [line] = _warnings(caplog)
    assert "it has no IOMMU group" in line


def test_discover_iommu_group_peer_in_use_refused(tmp_path, caplog):
    functions = pci_host.functions_of(pci_host.T4, ["t4-boot-vga"])
    root = pci_host.write_tree(tmp_path / "host", functions)
    # NOTE(tests): put 19:00.0 into the boot VGA device's group.
    devices = os.path.join(root, "sys", "bus", "pci", "devices")
    group = os.readlink(os.path.join(devices, "0000:18:00.0", "iommu_group"))
    os.unlink(os.path.join(devices, "0000:19:00.0", "iommu_group"))
    os.symlink(group, os.path.join(devices, "0000:19:00.0", "iommu_group"))
    os.symlink("../../../../bus/pci/devices/0000:19:00.0", os.path.join(
        devices, "0000:18:00.0", group, "devices", "0000:19:00.0"))

    handles = _handles(_driver(root, [{"product_id": "1eb8"}]).discover())

    assert "0000:19:00.0" not in handles
    assert any("0000:19:00.0" in line and "shares IOMMU group 0 with "
               "0000:18:00.0, which the host uses: it is the boot VGA"
               in line for line in _warnings(caplog))


def _nvme_host(tmp_path, mounts="", swaps="", holders=()):
    """An NVMe controller (invented, not recorded) with one partition."""
    bdf = "0000:01:00.0"
    root = pci_host.write_tree(tmp_path / "host", {bdf: {
        "vendor": "144d", "device": "a808", "class": "0108",
        "driver": "nvme"}})
    block = tmp_path / "host" / "sys" / "class" / "block"
    block.mkdir(parents=True)
    namespace = f"../../bus/pci/devices/{bdf}/nvme/nvme0/nvme0n1"
    os.symlink(namespace, block / "nvme0n1")
    os.symlink(f"{namespace}/nvme0n1p1", block / "nvme0n1p1")
    holders_dir = (tmp_path / "host" / "sys" / "bus" / "pci" / "devices" /
                   bdf / "nvme" / "nvme0" / "nvme0n1" / "nvme0n1p1" /
                   "holders")
    holders_dir.mkdir(parents=True)
    for holder in holders:
        (holders_dir / holder).mkdir()
    proc = tmp_path / "host" / "proc"
    proc.mkdir()
    (proc / "mounts").write_text(mounts)
    (proc / "swaps").write_text(
        "Filename\tType\tSize\tUsed\tPriority\n" + swaps)
    return root


@pytest.mark.parametrize("kwargs, reason", [
    ({"mounts": "/dev/nvme0n1p1 /var/lib/nova ext4 rw 0 0\n"},
     "its block device nvme0n1p1 is mounted on /var/lib/nova"),
    ({"swaps": "/dev/nvme0n1p1 partition 1024 0 -2\n"},
     "its block device nvme0n1p1 is used as swap"),
    ({"holders": ["dm-0"]},
     "its block device nvme0n1p1 is held by dm-0"),
])
def test_discover_disk_in_use_refused(tmp_path, caplog, kwargs, reason):
    root = _nvme_host(tmp_path, **kwargs)

    assert _driver(root, [{"vendor_id": "144d"}]).discover() == []
    [line] = _warnings(caplog)
    assert reason in line


def test_discover_unused_disk_offered(tmp_path):
    root = _nvme_host(tmp_path, mounts="/dev/sda1 / ext4 rw 0 0\n")

    devices = _driver(root, [{"vendor_id": "144d"}]).discover()

    assert [(d["type"], d["pci_address"]) for d in devices] == [
        ("PCI", "0000:01:00.0")]


def test_current_function_is_none_and_ready(tmp_path):
    driver = _host(tmp_path, pci_host.H100, [{"vendor_id": "10de"}])

    reading = driver.current_function(base.Region("0000:41:00.0", "0"))

    assert reading == base.reading(None)
    with pytest.raises(exception.RegionNotFound):
        driver.current_function(base.Region("0000:42:00.0", "0"))


def test_loaded_by_name_through_stevedore(tmp_path):
    conf = make_conf(sysfs_root=str(tmp_path))

    assert isinstance(drivers.load(conf, "pci"), pci.PciDriver)
    assert "pci" in drivers.available()
