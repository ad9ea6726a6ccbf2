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

"""A real container runtime resolves what the plugin prepared: Debian's
podman (4.3) with runc runs a busybox container with ``--device <CDI ID>``
as the plugin answered, and the container sees the device node and the
SR-IOV variables; after unprepare the ID no longer resolves.

podman 4.3 reads CDI specs only from /etc/cdi and /var/run/cdi, so the
plugin writes there (one file per claim uid, removed by unprepare). Runs as
root, with runc, no network and explicit ulimits (crun and podman's default
ulimits fail on this machine kind). Skipped, saying why, where podman cannot
run; .ci/run installs podman, runc and busybox-static.
"""

import os
import shutil
import subprocess
import uuid

import pytest

from tests.functional.cyborg_lite_dra import env

CDI_DIR = "/var/run/cdi"
RUN = ["podman", "run", "--rm", "--runtime", "runc", "--network", "none",
       "--ulimit", "nofile=20000:20000", "--ulimit", "nproc=32768:32768"]
REGION0 = "fpga-0000-0f-00-0-r0"


def _why_not():
    if os.geteuid() != 0:
        return "podman runs containers here only as root"
    for tool in ("podman", "runc", "busybox"):
        if shutil.which(tool) is None:
            return (f"{tool} is not installed (apt-get install podman runc "
                    f"busybox-static; .ci/run does it)")
    try:
        info = subprocess.run(["podman", "info"], capture_output=True,
                              text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"podman info failed: {error}"
    if info.returncode:
        return f"podman info failed: {info.stderr.strip()[-300:]}"
    return None


@pytest.fixture(scope="module")
def busybox_image(tmp_path_factory):
    """An image imported from a tar of busybox-static and its applets."""
    why = _why_not()
    if why:
        pytest.skip(why)
    root = tmp_path_factory.mktemp("rootfs")
    (root / "bin").mkdir()
    shutil.copy(shutil.which("busybox"), root / "bin" / "busybox")
    for applet in ("sh", "env", "stat", "ls", "cat"):
        (root / "bin" / applet).symlink_to("busybox")
    tar = root.parent / "busybox.tar"
    subprocess.run(["tar", "-C", str(root), "-cf", str(tar), "."],
                   check=True)
    tag = f"localhost/cyborg-lite-dra-test:{uuid.uuid4().hex[:8]}"
    subprocess.run(["podman", "import", str(tar), tag], check=True,
                   capture_output=True, timeout=300)
    yield tag
    subprocess.run(["podman", "rmi", "-f", tag], capture_output=True,
                   timeout=120)


def test_a_container_sees_the_device_and_the_variables(
        busybox_image, plugin_factory, cyborg_lite, kube_apiserver):
    plugin = plugin_factory(**{"dra.cdi_dir": CDI_DIR}).start()
    claim = env.allocate(kube_apiserver, plugin, REGION0,
                         cyborg_lite.profile("nlb3"))
    uid = claim[1]
    try:
        error, devices = plugin.prepare([claim])[uid]
        assert error == ""
        (cdi_id,) = devices[0][3]
        (arq,) = cyborg_lite.arqs_of(uid)
        address = env.handle_address(arq)
        node = f"/dev/cyborg-lite/{address.replace(':', '-')}"

        run = subprocess.run(
            RUN + ["--device", cdi_id, busybox_image, "/bin/sh", "-c",
                   f"stat -c '%F %t:%T' {node} && env"],
            capture_output=True, text=True, timeout=300)

        assert run.returncode == 0, run.stderr
        lines = run.stdout.splitlines()
        # /dev/null is the sim handles' device: character device 1:3.
        assert lines[0] == "character special file 1:3"
        variable = "PCIDEVICE_ACCEL_CYBORG_LITE_OPENSTACK_ORG_FPGA"
        assert f"{variable}={address}" in lines
        assert any(line.startswith(f"{variable}_INFO={{") for line in lines)
    finally:
        assert plugin.unprepare([claim]) == {uid: ""}

    gone = subprocess.run(RUN + ["--device", cdi_id, busybox_image,
                                 "/bin/sh", "-c", "true"],
                          capture_output=True, text=True, timeout=300)
    assert gone.returncode != 0
    assert cyborg_lite.arqs() == []


@pytest.mark.parametrize("cyborg_lite", [{"gpu": True}], indirect=True)
def test_a_container_gets_a_whole_gpu(busybox_image, plugin_factory,
                                      cyborg_lite, kube_apiserver):
    plugin = plugin_factory(**{"dra.cdi_dir": CDI_DIR}).start()
    claim = env.allocate(kube_apiserver, plugin, "gpu-0000-af-00-0",
                         cyborg_lite.profile(resource_class="PGPU"))
    uid = claim[1]
    try:
        error, devices = plugin.prepare([claim])[uid]
        assert error == ""
        (cdi_id,) = devices[0][3]
        (arq,) = cyborg_lite.arqs_of(uid)
        assert arq["device_rp_uuid"] == cyborg_lite.document["devices"][1][
            "regions"][0]["rp_uuid"]
        node = f"/dev/cyborg-lite/{env.GPU_PCI.replace(':', '-')}"

        run = subprocess.run(
            RUN + ["--device", cdi_id, busybox_image, "/bin/sh", "-c",
                   f"stat -c '%F %t:%T' {node} && env"],
            capture_output=True, text=True, timeout=300)

        assert run.returncode == 0, run.stderr
        lines = run.stdout.splitlines()
        assert lines[0] == "character special file 1:3"
        variable = "PCIDEVICE_ACCEL_CYBORG_LITE_OPENSTACK_ORG_PGPU"
        assert f"{variable}={env.GPU_PCI}" in lines
    finally:
        assert plugin.unprepare([claim]) == {uid: ""}
    assert cyborg_lite.arqs() == []


def test_two_containers_share_a_partitioned_region(
        busybox_image, plugin_factory, cyborg_lite, kube_apiserver):
    plugin = plugin_factory(**{"dra.cdi_dir": CDI_DIR,
                               "dra.partitionable_devices": "true"}).start()
    profile = cyborg_lite.profile("nlb3")
    claims = [env.allocate(kube_apiserver, plugin, f"{REGION0}-h{i}",
                           profile) for i in range(2)]
    try:
        answers = plugin.prepare(claims)
        seen = []
        for claim in claims:
            error, devices = answers[claim[1]]
            assert error == ""
            (cdi_id,) = devices[0][3]
            (arq,) = cyborg_lite.arqs_of(claim[1])
            assert arq["device_rp_uuid"] == cyborg_lite.rps[0]
            address = env.handle_address(arq)
            run = subprocess.run(
                RUN + ["--device", cdi_id, busybox_image, "/bin/sh", "-c",
                       "ls /dev/cyborg-lite && env"],
                capture_output=True, text=True, timeout=300)
            assert run.returncode == 0, run.stderr
            lines = run.stdout.splitlines()
            # Each container has its own handle of the region, only it.
            assert lines[0] == address.replace(":", "-")
            assert (f"PCIDEVICE_ACCEL_CYBORG_LITE_OPENSTACK_ORG_FPGA="
                    f"{address}") in lines
            seen.append(address)
        assert len(set(seen)) == 2
    finally:
        assert plugin.unprepare(claims) == {c[1]: "" for c in claims}
    assert cyborg_lite.arqs() == []
