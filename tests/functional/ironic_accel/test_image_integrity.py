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

"""Only checked bytes reach a device, on real Ironic and the emulator.

The origin here answers the first download of an image with the image the
step's checksum names and every later one with another valid image (a
mirror updated mid-step, anyone on the path). Whatever the update method,
the device ends with the checked image, the origin is read once (by the
conductor's check), the BMC fetches only the conductor's staged copy, and
the staged copies are gone when the step ends, well or not.
"""

import http.server
import os
import threading
import uuid

import pytest

from accel_tools.embedded import bmc as embedded_bmc
from accel_tools.embedded import images as embedded_images
from accel_tools.embedded import ironic as embedded_ironic

FPGA_TARGET = "/redfish/v1/UpdateService/FirmwareInventory/1-FPGA0"
SIMPLE_UPDATE = "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate"


class SwappingOrigin:
    """An HTTP origin serving ``first`` to the first GET of each path and
    ``then`` to every later one; ``gets`` counts GETs per path."""

    def __init__(self):
        self.images = {}
        self.gets = {}
        origin = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                if self.path not in origin.images:
                    self.send_error(404)
                    return
                count = origin.gets.get(self.path, 0)
                origin.gets[self.path] = count + 1
                first, then = origin.images[self.path]
                body = first if count == 0 else then
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Content-Type", "application/octet-stream")
                self.end_headers()
                self.wfile.write(body)

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                                       Handler)
        self.url = "http://127.0.0.1:%d" % self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, args=(0.05,),
                         daemon=True).start()

    def publish(self, name, first_path, then_path):
        """Serve the two image files at ``/<name>``; returns its URL."""
        self.images["/" + name] = (first_path.read_bytes(),
                                   then_path.read_bytes())
        return self.url + "/" + name

    def stop(self):
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def origin():
    server = SwappingOrigin()
    yield server
    server.stop()


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


def _swapped_firmware(origin, tmp_path):
    """The URL of a firmware 2.1.0 image that turns into 6.6.6 after its
    first download, and the checksum of 2.1.0."""
    checked, checksum = embedded_images.make_firmware_image(tmp_path,
                                                            "2.1.0")
    other, _ = embedded_images.make_firmware_image(tmp_path, "6.6.6")
    return origin.publish("fpga-fw.img", checked, other), checksum


def _version(bmc):
    root = bmc.sushy()
    return root.get_update_service().firmware_inventory.get_member(
        FPGA_TARGET).version


def _image_uris(bmc):
    return [r["body"]["ImageURI"] for r in bmc.requests()
            if r["method"] == "POST" and r["path"] == SIMPLE_UPDATE]


def _leftovers(ironic_server, node):
    staged = os.path.join(ironic_server.http_root, "firmware", node.id)
    work = os.path.join(ironic_server.tempdir, node.id)
    return [p for p in (staged, work) if os.path.exists(p)]


@pytest.mark.parametrize("profile", [
    "simple", "location-202", "multipart", "simple-no-targets", "httppush"])
def test_a_swapped_origin_never_reaches_the_device(
        baremetal, ironic_server, bmc_of, origin, tmp_path, profile):
    bmc = bmc_of(profile)
    node = _node(baremetal, bmc)
    url, checksum = _swapped_firmware(origin, tmp_path)
    bmc.clear_requests()

    node = embedded_ironic.clean(baremetal, node, [{
        "interface": "firmware", "step": "update_accelerator_firmware",
        "args": {"settings": [{"accelerator": "fpga0", "url": url,
                               "checksum": checksum, "version": "2.1.0"}]}}])

    assert node.provision_state == "manageable", node.last_error
    assert _version(bmc) == "2.1.0"
    assert origin.gets == {"/fpga-fw.img": 1}
    for image_uri in _image_uris(bmc):
        assert image_uri.startswith(ironic_server.http_url)
    assert _leftovers(ironic_server, node) == []


def test_a_failed_step_leaves_no_staged_image(
        baremetal, ironic_server, bmc_emulator, origin, tmp_path):
    node = _node(baremetal, bmc_emulator)
    url, checksum = _swapped_firmware(origin, tmp_path)
    bmc_emulator.set_faults(task_exception=True, task_seconds=1)

    node = embedded_ironic.clean(baremetal, node, [{
        "interface": "firmware", "step": "update_accelerator_firmware",
        "args": {"settings": [{"accelerator": "fpga0", "url": url,
                               "checksum": checksum, "version": "2.1.0"}]}}])

    assert node.provision_state == "clean failed"
    assert "ended in state Exception" in node.last_error
    [image_uri] = _image_uris(bmc_emulator)
    assert image_uri.startswith(ironic_server.http_url)
    assert _leftovers(ironic_server, node) == []


def test_deploy_template_programs_only_the_checked_image(
        baremetal, ironic_server, bmc_emulator, origin, tmp_path):
    wanted, other = str(uuid.uuid4()), str(uuid.uuid4())
    checked, checksum = embedded_images.make_firmware_image(
        tmp_path, "1.0", function_id=wanted, kind="function")
    swapped, _ = embedded_images.make_firmware_image(
        tmp_path, "1.0", function_id=other, kind="function")
    url = origin.publish("user-image.gbs", checked, swapped)
    trait = "CUSTOM_ACCEL_PROGRAM_%s" % uuid.uuid4().hex[:12].upper()
    template = baremetal.create_deploy_template(name=trait, steps=[{
        "interface": "firmware", "step": "program_accelerator",
        "priority": 150,
        "args": {"settings": [{"accelerator": "fpga0", "url": url,
                               "checksum": checksum}]}}])
    try:
        node = _node(baremetal, bmc_emulator)
        baremetal.add_node_trait(node, trait)
        baremetal.set_node_provision_state(node, "provide")
        embedded_ironic.wait_for_state(baremetal, node, "available")
        baremetal.patch_node(node.id, [{
            "op": "add", "path": "/instance_info",
            "value": {"image_source": checked.as_uri(), "traits": [trait]}}])

        baremetal.set_node_provision_state(node, "active")
        node = embedded_ironic.wait_for_state(
            baremetal, node, {"active", "deploy failed"})

        assert node.provision_state == "active", node.last_error
        fpga = node.extra["accelerators"]["devices"][0]
        assert {r["function_id"] for r in fpga["regions"]} == {wanted}
        assert origin.gets == {"/user-image.gbs": 1}
        [image_uri] = _image_uris(bmc_emulator)
        assert image_uri.startswith(ironic_server.http_url)
        assert _leftovers(ironic_server, node) == []
    finally:
        baremetal.delete_deploy_template(template)
