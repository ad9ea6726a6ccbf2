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

"""Image resolution from the standalone catalog and checksum checks."""

import hashlib
import json

import pytest

from cyborg_lite.agent import exception
from cyborg_lite.agent import images
from tests.unit.cyborg_lite.agent.conftest import make_conf


def write_catalog(directory, entries):
    """Write ``index.json`` and image files: entries are
    (id, function_id, content, sha256-or-None for the right one)."""
    directory.mkdir(parents=True, exist_ok=True)
    index = []
    for image_id, function_id, content, digest in entries:
        (directory / f"{image_id}.gbs").write_bytes(content)
        index.append({"id": image_id, "function_id": function_id,
                      "file": f"{image_id}.gbs",
                      "sha256": digest or hashlib.sha256(content)
                      .hexdigest()})
    (directory / "index.json").write_text(json.dumps({"images": index}))


@pytest.fixture
def conf(tmp_path):
    write_catalog(tmp_path / "catalog", [
        ("img-nlb0", "nlb0", b"nlb0 bits", None),
        ("img-dma-a", "dma", b"dma a", None),
        ("img-dma-b", "dma", b"dma b", None),
        ("img-bad", "bad", b"tampered", "0" * 64),
    ])
    return make_conf(image_catalog_dir=str(tmp_path / "catalog"))


def test_standalone_uses_the_catalog_when_glance_is_not_configured(conf):
    assert isinstance(images.source(conf), images.CatalogSource)


def test_bitstream_id_finds_the_image(conf):
    image = images.resolve(conf, bitstream_id="img-nlb0")
    assert (image.id, image.function_id, image.source) == (
        "img-nlb0", "nlb0", "catalog")


def test_function_id_finds_exactly_one_image(conf):
    assert images.resolve(conf, function_id="nlb0").id == "img-nlb0"


def test_function_id_with_no_image_is_a_clear_error(conf):
    with pytest.raises(exception.ImageNotFound,
                       match="no catalog image has accel:function_id=none"):
        images.resolve(conf, function_id="none")


def test_function_id_with_two_images_is_ambiguous(conf):
    with pytest.raises(exception.ImageAmbiguous,
                       match="2 images carry accel:function_id dma "
                             r"\(img-dma-a, img-dma-b\)"):
        images.resolve(conf, function_id="dma")


def test_unknown_bitstream_id_is_a_clear_error(conf):
    with pytest.raises(exception.ImageNotFound, match="no image nope"):
        images.resolve(conf, bitstream_id="nope")


@pytest.mark.parametrize("kwargs", [{}, {"bitstream_id": "a",
                                         "function_id": "b"}])
def test_exactly_one_of_bitstream_and_function(conf, kwargs):
    with pytest.raises(exception.InvalidRequest, match="exactly one"):
        images.resolve(conf, **kwargs)


def test_fetch_verifies_the_checksum(conf):
    source = images.source(conf)
    image = source.by_id("img-nlb0")
    with source.fetch(image) as path:
        with open(path, "rb") as handle:
            assert handle.read() == b"nlb0 bits"


def test_checksum_mismatch_refuses_the_image(conf):
    source = images.source(conf)
    image = source.by_id("img-bad")
    with pytest.raises(exception.ChecksumMismatch,
                       match="expected 0000.*nothing was programmed"):
        with source.fetch(image):
            pytest.fail("a tampered image must not be handed out")


def test_missing_catalog_says_where_it_looked(tmp_path):
    conf = make_conf(image_catalog_dir=str(tmp_path / "none"))
    with pytest.raises(exception.ImageNotFound,
                       match="no image catalog at .*none/index.json"):
        images.resolve(conf, function_id="x")


def test_malformed_catalog_is_a_clear_error(tmp_path):
    (tmp_path / "index.json").write_text('{"images": [{"id": "x"}]}')
    conf = make_conf(image_catalog_dir=str(tmp_path))
    with pytest.raises(exception.ImageNotFound, match="lacks 'file'"):
        images.resolve(conf, function_id="x")
