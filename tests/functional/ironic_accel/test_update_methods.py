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

"""``update_accelerator_firmware`` on real Ironic against the emulator's
update profiles, the shapes real BMCs take images in: the method is chosen
from what the UpdateService advertises (or forced), the checksum is checked
before anything reaches the BMC, and the version is confirmed the same way
for each."""

import uuid

import pytest

from accel_tools.embedded import bmc as embedded_bmc
from accel_tools.embedded import images as embedded_images
from accel_tools.embedded import ironic as embedded_ironic

FPGA_TARGET = "/redfish/v1/UpdateService/FirmwareInventory/1-FPGA0"
V1 = "/redfish/v1/UpdateService"
UPDATE_POSTS = {V1 + "/Actions/UpdateService.SimpleUpdate", V1 + "/update",
                V1 + "/FWUpdate"}


@pytest.fixture
def bmc_of(tmp_path):
    started = []

    def start(profile):
        workdir = tmp_path / f"bmc-{profile}"
        workdir.mkdir()
        emulator = embedded_bmc.BmcEmulator(workdir, profile=profile).start()
        started.append(emulator)
        return emulator

    yield start
    for emulator in started:
        emulator.stop()


def _node(baremetal, bmc):
    node = embedded_ironic.enroll(
        baremetal, bmc, name=f"compute-{uuid.uuid4().hex[:8]}.example.org")
    node = embedded_ironic.manage(baremetal, node)
    assert node.provision_state == "manageable", node.last_error
    return node


def _step(image_server, tmp_path, version, checksum=None, method=None):
    path, good = embedded_images.make_firmware_image(tmp_path, version)
    args = {"settings": [{"accelerator": "fpga0",
                          "url": image_server.url_for(path),
                          "checksum": checksum or good,
                          "version": version}]}
    if method:
        args["update_method"] = method
    return {"interface": "firmware", "step": "update_accelerator_firmware",
            "args": args}


def _update_posts(bmc):
    return [r for r in bmc.requests()
            if r["method"] == "POST" and r["path"] in UPDATE_POSTS]


def _version(bmc):
    root = bmc.sushy()
    return root.get_update_service().firmware_inventory.get_member(
        FPGA_TARGET).version


@pytest.mark.parametrize("profile, path", [
    ("simple", V1 + "/Actions/UpdateService.SimpleUpdate"),
    ("location-202", V1 + "/Actions/UpdateService.SimpleUpdate"),
    ("multipart", V1 + "/update"),
    ("simple-no-targets", V1 + "/update"),
    ("httppush", V1 + "/FWUpdate"),
])
def test_each_bmc_shape_is_updated_and_confirmed(
        baremetal, bmc_of, image_server, tmp_path, profile, path):
    bmc = bmc_of(profile)
    node = _node(baremetal, bmc)
    bmc.clear_requests()

    node = embedded_ironic.clean(baremetal, node, [
        _step(image_server, tmp_path, "2.1.0")])

    assert node.provision_state == "manageable", node.last_error
    assert _version(bmc) == "2.1.0"
    [post] = _update_posts(bmc)
    assert post["path"] == path
    progress = node.driver_internal_info["accel_progress"]["fpga0"]
    assert progress["state"] == "Confirmed"
    if profile == "httppush":
        patches = [r for r in bmc.requests() if r["method"] == "PATCH"]
        assert patches[-1]["body"] == {"HttpPushUriTargets": [FPGA_TARGET]}


@pytest.mark.parametrize("profile", ["multipart", "httppush"])
def test_a_wrong_checksum_never_reaches_a_push_bmc(
        baremetal, bmc_of, image_server, tmp_path, profile):
    bmc = bmc_of(profile)
    node = _node(baremetal, bmc)
    bmc.clear_requests()

    node = embedded_ironic.clean(baremetal, node, [_step(
        image_server, tmp_path, "2.1.0", checksum="sha256:" + "0" * 64)])

    assert node.provision_state == "clean failed"
    assert "checksum" in node.last_error
    assert _update_posts(bmc) == []
    assert _version(bmc) == "2.0.1"


def test_a_forced_method_the_bmc_lacks_fails_naming_what_it_offers(
        baremetal, bmc_of, image_server, tmp_path):
    bmc = bmc_of("multipart")
    node = _node(baremetal, bmc)
    bmc.clear_requests()

    node = embedded_ironic.clean(baremetal, node, [_step(
        image_server, tmp_path, "2.1.0", method="HttpPushUri")])

    assert node.provision_state == "clean failed"
    assert "HttpPushUri" in node.last_error
    assert "MultipartHttpPushUri" in node.last_error
    assert _update_posts(bmc) == []


def test_a_forced_simple_update_goes_without_the_targets_the_bmc_refuses(
        baremetal, bmc_of, image_server, tmp_path):
    """Forced SimpleUpdate on a BMC whose ActionInfo lists no Targets is
    sent without them; this emulator cannot tell the device from the image
    alone and answers 400, which fails the step with the BMC's words."""
    bmc = bmc_of("simple-no-targets")
    node = _node(baremetal, bmc)
    bmc.clear_requests()

    node = embedded_ironic.clean(baremetal, node, [_step(
        image_server, tmp_path, "2.1.0", method="SimpleUpdate")])

    [post] = _update_posts(bmc)
    assert "Targets" not in post["body"]
    assert node.provision_state == "clean failed"
    assert "Targets" in node.last_error
    assert _version(bmc) == "2.0.1"
