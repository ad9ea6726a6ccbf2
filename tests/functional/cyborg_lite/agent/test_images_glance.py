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

"""Image resolution and download from Glance, through openstacksdk, against
the Glance stand-in."""

import pytest

from cyborg_lite.agent import exception
from cyborg_lite.agent import images
from tests.functional.cyborg_lite.agent.glance_standin import GlanceStandIn
from tests.unit.cyborg_lite.agent.conftest import make_conf


@pytest.fixture
def glance():
    server = GlanceStandIn().start()
    yield server
    server.stop()


@pytest.fixture
def conf(glance, tmp_path):
    conf = make_conf(image_cache_dir=str(tmp_path), enabled_drivers=["sim"])
    conf.set_override("auth_type", "none", group="glance")
    conf.set_override("endpoint_override", glance.url, group="glance")
    return conf


def test_configured_glance_is_the_image_source(conf):
    assert isinstance(images.source(conf), images.GlanceSource)


def test_bitstream_id_is_a_glance_image(conf, glance):
    image_id = glance.add_image(b"nlb0 bits", function_id="nlb0")

    image = images.resolve(conf, bitstream_id=image_id)

    assert (image.id, image.function_id, image.hash_algo) == (
        image_id, "nlb0", "sha512")
    assert ("GET", f"/v2/images/{image_id}", {}) in glance.requests


def test_function_id_queries_the_image_property(conf, glance):
    image_id = glance.add_image(b"dma", function_id="dma-2")
    glance.add_image(b"other", function_id="other")

    image = images.resolve(conf, function_id="dma-2")

    assert image.id == image_id
    assert ("GET", "/v2/images",
            {"accel:function_id": ["dma-2"]}) in glance.requests


def test_function_id_with_no_or_two_images_fails(conf, glance):
    glance.add_image(b"a", function_id="twice")
    glance.add_image(b"b", function_id="twice")

    with pytest.raises(exception.ImageNotFound,
                       match="no glance image has accel:function_id=none"):
        images.resolve(conf, function_id="none")
    with pytest.raises(exception.ImageAmbiguous, match="2 images"):
        images.resolve(conf, function_id="twice")


def test_unknown_image_is_a_clear_error(conf):
    with pytest.raises(exception.ImageNotFound,
                       match="Glance has no image 0000"):
        images.resolve(conf, bitstream_id="0000")


def test_download_is_verified_and_cleaned_up(conf, glance, tmp_path):
    image_id = glance.add_image(b"x" * 300000, function_id="big")
    source = images.source(conf)

    with source.fetch(source.by_id(image_id)) as path:
        with open(path, "rb") as handle:
            assert handle.read() == b"x" * 300000

    assert not list(tmp_path.glob("cyborg-lite-image-*"))


def test_corrupted_download_is_refused(conf, glance):
    image_id = glance.add_image(b"good bits", function_id="f", corrupt=True)
    source = images.source(conf)

    with pytest.raises(exception.ChecksumMismatch, match="sha512"):
        with source.fetch(source.by_id(image_id)):
            pytest.fail("a corrupted image must not be handed out")


def test_image_without_checksum_is_refused(conf, glance):
    image_id = glance.add_image(b"bits", function_id="f", checksum=None,
                                os_hash_value=None)
    source = images.source(conf)

    with pytest.raises(exception.ImageDownloadFailed, match="no checksum"):
        with source.fetch(source.by_id(image_id)):
            pytest.fail("an unverifiable image must not be handed out")


def test_agent_downloads_verifies_and_programs_a_glance_image(
        conf, glance, tmp_path):
    from cyborg_lite.agent import manager
    from cyborg_lite.agent.drivers import sim

    conf.set_override("sim_state_dir", str(tmp_path / "sim"), group="agent")
    conf.set_override("sim_program_seconds", 0, group="agent")
    good = glance.add_image(b"nlb0 bitstream", function_id="nlb0")
    glance.add_image(b"nlb3 bitstream", function_id="nlb3", corrupt=True)
    agent = manager.AgentManager(conf)

    result = agent.program_region({}, pci_address="0000:5e:00.0",
                                  region_id="0", bitstream_id=good)
    assert (result["function_id"], result["image"]["source"]) == (
        "nlb0", "glance")
    assert ("GET", f"/v2/images/{good}/file", {}) in glance.requests

    with pytest.raises(exception.ChecksumMismatch):
        agent.program_region({}, pci_address="0000:5e:00.0", region_id="0",
                             function_id="nlb3")
    region = sim.read_state(str(tmp_path / "sim"))["0000:5e:00.0"][
        "regions"][0]
    assert (region["function_id"], region["state"]) == ("nlb0", "ready")
