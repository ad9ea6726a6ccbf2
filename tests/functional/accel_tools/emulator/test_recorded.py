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


"""Recorded BMC trees on real Ironic.

``ironic-accel-bmc-emulator replay`` serves a tree of tests/data/redfish (the
shapes of real BMCs); a real Ironic enrolls a node on it and ``manage`` runs
the ``refresh_accelerator_inventory`` verify step. ``record`` then dumps the
served tree, and the recording reads the same.
"""

import json
import os
import subprocess
import sys
import time
import types
import uuid

import requests

from accel_common import inventory
from accel_tools.embedded import common
from accel_tools.embedded import ironic as embedded_ironic
from accel_tools.emulator import recorded

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "..", "data", "redfish")
USER, PASSWORD = "admin", "s3cret-pw"


class Replay:
    """``ironic-accel-bmc-emulator replay`` of one tree, as a subprocess."""

    def __init__(self, tree, tmp_path):
        self.port = common.free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.username, self.password = USER, PASSWORD
        self.log = tmp_path / f"replay-{self.port}.log"
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "accel_tools.emulator.main", "replay", "--tree", tree,
                 "--port", str(self.port), "--username", USER, "--password", PASSWORD],
                stdout=log, stderr=subprocess.STDOUT, env=common.child_env())
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.log.read_text()
            try:
                if requests.get(self.url + "/redfish/v1/", timeout=1).ok:
                    return
            except requests.ConnectionError:
                time.sleep(0.05)
        self.stop()
        raise AssertionError("replay did not answer:\n" + self.log.read_text())

    def system_uri(self, system):
        return f"/redfish/v1/Systems/{system}"

    def stop(self):
        self.process.terminate()
        self.process.wait(10)


def _manage(baremetal, replay, system):
    bmc = types.SimpleNamespace(url=replay.url, username=USER, password=PASSWORD,
                                system_uri=lambda _: replay.system_uri(system))
    node = embedded_ironic.enroll(baremetal, bmc,
                                  name="compute-%s.example.org" % uuid.uuid4().hex[:8])
    return embedded_ironic.manage(baremetal, node, timeout=90)


def _devices(node):
    document = node.extra["accelerators"]
    inventory.validate(document)
    return {d["id"]: d for d in document["devices"]}


def test_real_ironic_reads_recorded_bmc_shapes(baremetal, tmp_path):
    # NOTE: one tree after the other; Ironic on sqlite serializes badly.
    cray = Replay(os.path.join(DATA, "hpe-cray-ex235n"), tmp_path)
    try:
        node = _manage(baremetal, cray, "Node1")
    finally:
        cray.stop()
    assert node.provision_state == "manageable", node.last_error
    devices = _devices(node)
    assert node.extra["accelerators"]["schema_version"] == "1.1"
    assert sorted(devices) == ["gpu0", "gpu1", "gpu2", "gpu3"]
    assert {(d["type"], d["model"], d["pci_address"], d["firmware_version"])
            for d in devices.values()} == {
        ("GPU", "NVIDIA_A100-SXM4-40GB", None, "92.00.19.00.13")}
    assert devices["gpu2"]["redfish_uri"] == "/redfish/v1/Systems/Node1/Processors/GPU2"
    assert "CUSTOM_ACCEL_GPU" in node.traits

    # No UpdateService at all (DMTF public-cxl): the inventory still reads.
    cxl = Replay(os.path.join(DATA, "dmtf-public-cxl"), tmp_path)
    try:
        node = _manage(baremetal, cxl, "CXL-System")
    finally:
        cxl.stop()
    assert node.provision_state == "manageable", node.last_error
    assert {k: (d["type"], d["vendor_id"]) for k, d in _devices(node).items()} == {
        "fpga": ("FPGA", "0xabcd"), "gpu": ("GPU", "0xabcd")}

    # The GPUs of an HGX baseboard: a second System, PCIe under the Chassis.
    hgx = Replay(os.path.join(DATA, "nvidia-hgx-h100"), tmp_path)
    try:
        node = _manage(baremetal, hgx, "1")
    finally:
        hgx.stop()
    assert node.provision_state == "manageable", node.last_error
    devices = _devices(node)
    assert sorted(devices) == ["fpga_0"] + [f"gpu_sxm_{n}" for n in range(1, 9)]
    assert (devices["gpu_sxm_3"]["product_id"], devices["gpu_sxm_3"]["firmware_version"]) == (
        "0x2330", "96.00.74.00.1C")


def test_real_ironic_reads_recorded_sriov_nics(baremetal, tmp_path):
    # DMTF public-smartnic: two adapters with one Id, each in a card chassis
    # the server's chassis contains, reporting virtual functions.
    smartnic = Replay(os.path.join(DATA, "dmtf-public-smartnic"), tmp_path)
    try:
        node = _manage(baremetal, smartnic, "437XR1138R2")
    finally:
        smartnic.stop()
    assert node.provision_state == "manageable", node.last_error
    devices = _devices(node)
    assert {k: (d["type"], d["redfish_uri"], d["firmware_version"],
                d["regions"][0]["resource_class"])
            for k, d in devices.items()} == {
        "conto2550": ("NIC", "/redfish/v1/Chassis/Card1/NetworkAdapters/Slot1", "8.11.0",
                      "CUSTOM_NIC"),
        "conto2550-2": ("NIC", "/redfish/v1/Chassis/Card2/NetworkAdapters/Slot2", "8.11.0",
                        "CUSTOM_NIC")}
    assert "CUSTOM_ACCEL_NIC" in node.traits


def _run(*args, **env):
    return subprocess.run([sys.executable, "-m", "accel_tools.emulator.main", *args],
                          capture_output=True, text=True, timeout=120,
                          env=common.child_env(**env))


def test_record_dumps_what_discovery_reads_without_credentials(tmp_path):
    tree = recorded.load_tree(os.path.join(DATA, "nvidia-hgx-h100"))
    gpu = "/redfish/v1/Systems/HGX_Baseboard_0/Processors/GPU_SXM_1"
    tree[gpu] = dict(tree[gpu], Oem={"Vendor": {"ServicePassword": "hunter2",
                                                "SessionToken": "abc", "Keep": 1}})
    source = tmp_path / "source"
    for path, doc in tree.items():
        target = source / path[len("/redfish/v1"):].strip("/")
        target.mkdir(parents=True, exist_ok=True)
        (target / "index.json").write_text(json.dumps(doc))
    replay = Replay(str(source), tmp_path)
    try:
        out = tmp_path / "recording"
        refused = _run("record", "--url", replay.url, "--username", USER, "--out", str(out),
                       IRONIC_ACCEL_BMC_PASSWORD="wrong")
        done = _run("record", "--url", replay.url, "--username", USER, "--out", str(out),
                    IRONIC_ACCEL_BMC_PASSWORD=PASSWORD)
    finally:
        replay.stop()
    assert refused.returncode == 1
    assert "refused the credentials" in refused.stderr
    assert done.returncode == 0, done.stderr
    assert "credentials removed from 1" in done.stdout

    recording = recorded.load_tree(str(out))
    text = "".join(json.dumps(doc) for doc in recording.values())
    assert "hunter2" not in text and "abc" not in text and PASSWORD not in text
    assert recording[gpu]["Oem"] == {"Vendor": {"Keep": 1}}
    # What discovery reads is all there: the same paths as the source tree,
    # but for the chassis collections nothing follows.
    missing = set(tree) - set(recording)
    assert all(p.endswith(("/Chassis", "/HGX_Chassis_0", "/HGX_FPGA_0")) for p in missing), \
        sorted(missing)
    summary = json.loads((out / recorded.RECORD_FILE).read_text())
    assert summary["removed"] == {gpu: ["/Oem/Vendor/ServicePassword",
                                        "/Oem/Vendor/SessionToken"]}
    assert summary["failed"] == {}
