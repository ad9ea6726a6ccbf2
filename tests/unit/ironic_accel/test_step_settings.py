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

import hashlib
import http.server
import threading
import types

from ironic.common import exception
import pytest

from ironic_accel import step_settings

DIGEST = "a" * 64
NODE = types.SimpleNamespace(uuid="1be26c0b-03f2-4d2e-ae87-c02d7f33c123")


def _setting(**kw):
    return dict({"accelerator": "fpga0", "url": "http://img/fw.bin",
                 "checksum": "sha256:" + DIGEST, "version": "2.1.0"}, **kw)


def test_validate_accepts_good_settings_and_bare_digest():
    settings = [_setting(), _setting(checksum=DIGEST.upper())]
    assert step_settings.validate("update_accelerator_firmware",
                                  step_settings.UPDATE_SCHEMA,
                                  settings) is settings


@pytest.mark.parametrize("settings, named", [
    ([_setting(checksum="md5:abc")], "settings[0].checksum"),
    ([_setting(url="ftp://img/fw.bin")], "settings[0].url"),
    ([_setting(), {"url": "http://x", "checksum": DIGEST}], "settings[1]"),
    ([_setting(color="blue")], "allowed: accelerator, checksum, url"),
    ([], "settings"),
    ({"accelerator": "fpga0"}, "settings"),
])
def test_validate_names_the_bad_argument(settings, named):
    with pytest.raises(exception.InvalidParameterValue) as err:
        step_settings.validate("update_accelerator_firmware",
                               step_settings.UPDATE_SCHEMA, settings)
    assert named in str(err.value)
    assert "update_accelerator_firmware" in str(err.value)


def test_program_schema_takes_function_id_not_version():
    step_settings.validate("program_accelerator",
                           step_settings.PROGRAM_SCHEMA,
                           [{"accelerator": "FPGA", "url": "https://x/u.gbs",
                             "checksum": DIGEST, "function_id": "f-1"}])
    with pytest.raises(exception.InvalidParameterValue):
        step_settings.validate("program_accelerator",
                               step_settings.PROGRAM_SCHEMA, [_setting()])


@pytest.fixture
def image_url(tmp_path):
    (tmp_path / "fw.bin").write_bytes(b"firmware-2.1.0")
    handler = type("Quiet", (http.server.SimpleHTTPRequestHandler,),
                   {"log_message": lambda *a: None})
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0),
        lambda *a: handler(*a, directory=str(tmp_path)))
    threading.Thread(target=server.serve_forever, args=(0.05,),
                     daemon=True).start()
    yield "http://127.0.0.1:%d/fw.bin" % server.server_address[1]
    server.shutdown()
    server.server_close()


def test_verify_checksums_accepts_matching_image(image_url):
    digest = hashlib.sha256(b"firmware-2.1.0").hexdigest()
    step_settings.verify_checksums(NODE, [_setting(url=image_url,
                                                   checksum=digest)])


def test_verify_checksums_mismatch_names_device_and_checksum(image_url):
    wrong = "sha256:" + "0" * 64
    with pytest.raises(exception.InvalidParameterValue) as err:
        step_settings.verify_checksums(NODE, [_setting(url=image_url,
                                                       checksum=wrong)])
    message = str(err.value)
    assert "fpga0" in message and wrong in message and NODE.uuid in message
    assert hashlib.sha256(b"firmware-2.1.0").hexdigest() in message


def test_verify_checksums_unreachable_image_names_url(image_url):
    missing = image_url.replace("fw.bin", "nope.bin")
    with pytest.raises(exception.ImageDownloadFailed) as err:
        step_settings.verify_checksums(NODE, [_setting(url=missing)])
    assert missing in str(err.value)


DOCUMENT = {"devices": [
    {"id": "fpga0", "type": "FPGA", "model": "PAC Arria10",
     "redfish_uri": "/redfish/v1/Systems/1/Processors/FPGA0"},
    {"id": "fpga1", "type": "FPGA", "model": "Alveo U250",
     "redfish_uri": "/redfish/v1/Systems/1/Processors/FPGA1"},
    {"id": "gpu0", "type": "GPU", "model": "Tesla T4",
     "redfish_uri": "/redfish/v1/Systems/1/Processors/GPU0"},
]}


@pytest.mark.parametrize("selector, expected", [
    ("fpga0", ["fpga0"]),
    ("FPGA1", ["fpga1"]),           # the Redfish Id
    ("alveo-u250", ["fpga1"]),      # the model, loosely
    ("FPGA", ["fpga0", "fpga1"]),   # the type
    ("gpu", ["gpu0"]),
])
def test_select_devices_by_id_model_or_type(selector, expected):
    found = step_settings.select_devices(NODE, DOCUMENT, selector)
    assert [d["id"] for d in found] == expected


def test_select_devices_unknown_selector_lists_devices():
    with pytest.raises(exception.InvalidParameterValue) as err:
        step_settings.select_devices(NODE, DOCUMENT, "qat0")
    assert "qat0" in str(err.value) and "gpu0 (GPU" in str(err.value)
