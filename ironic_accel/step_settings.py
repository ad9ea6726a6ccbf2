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

"""The ``settings`` of the accelerator steps: schema, images, devices.

Everything here runs before the BMC is asked to do anything: the JSON
schema check, the image checksum check (the image is downloaded and hashed
here, and the checked copy kept for the BMC, so a wrong image never reaches
it), and the choice of devices a
setting's ``accelerator`` selects.
"""

import re

from ironic.common import exception
import jsonschema

from ironic_accel import image_staging

_CHECKSUM = r"^(sha256:)?[0-9a-fA-F]{64}$"
_URL = r"^https?://.+"

_COMMON = {
    "accelerator": {"type": "string", "minLength": 1, "maxLength": 255},
    "url": {"type": "string", "pattern": _URL},
    "checksum": {"type": "string", "pattern": _CHECKSUM},
}


def _schema(extra):
    return {
        "type": "array",
        "minItems": 1,
        "items": {
            "type": "object",
            "required": ["accelerator", "url", "checksum"],
            "additionalProperties": False,
            "properties": dict(_COMMON, **extra),
        },
    }


#: settings of update_accelerator_firmware.
UPDATE_SCHEMA = _schema({"version": {"type": "string", "minLength": 1,
                                     "maxLength": 255}})
#: settings of program_accelerator.
PROGRAM_SCHEMA = _schema({"function_id": {"type": "string", "minLength": 1,
                                          "maxLength": 255}})

_HINTS = {
    "checksum": "expected sha256:<64 hex digits> or a bare sha256 digest",
    "url": "expected an http:// or https:// URL the BMC can download",
}


def validate(step, schema, settings):
    """Check ``settings`` against ``schema``.

    :raises: InvalidParameterValue naming the step and the bad argument,
        e.g. ``settings[0].checksum``.
    :returns: the settings.
    """
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(
        settings), key=lambda e: [str(p) for p in e.absolute_path])
    if not errors:
        return settings
    error = errors[0]
    where = "settings" + "".join(
        f"[{p}]" if isinstance(p, int) else f".{p}"
        for p in error.absolute_path)
    hint = ""
    if error.absolute_path and error.absolute_path[-1] in _HINTS:
        hint = f" ({_HINTS[error.absolute_path[-1]]})"
    if error.validator == "additionalProperties":
        hint = f" (allowed: {', '.join(sorted(error.schema['properties']))})"
    raise exception.InvalidParameterValue(
        f"Invalid argument {where} of step {step}: {error.message}{hint}")


def expected_digest(checksum):
    """The hex sha256 digest a ``checksum`` setting names."""
    return checksum.split(":", 1)[-1].lower()


def verify_checksums(node, settings):
    """Check every image of ``settings`` against its checksum.

    Each URL is downloaded once, and the checked copy kept for the BMC
    (:mod:`ironic_accel.image_staging`); a copy that fails its check is
    removed.

    :raises: InvalidParameterValue naming the node, the accelerator, the URL
        and the checksum; ImageDownloadFailed when an image cannot be read.
    """
    digests = {}
    for setting in settings:
        url = setting["url"]
        if url not in digests:
            digests[url] = image_staging.download(node, url)
        path, digest = digests[url]
        expected = expected_digest(setting["checksum"])
        if digest != expected:
            image_staging.discard(path)
            raise exception.InvalidParameterValue(
                f"Image checksum mismatch for accelerator "
                f"{setting['accelerator']} of node {node.uuid}: checksum "
                f"{setting['checksum']} was given but {url} has sha256:"
                f"{digest}; nothing was sent to the BMC")


def _norm(text):
    return re.sub(r"[^a-z0-9]", "", str(text or "").lower())


def select_devices(node, document, selector):
    """The devices of ``document`` an ``accelerator`` setting selects.

    ``selector`` matches a device id (``fpga0``, case-insensitive), the last
    part of its Redfish URI (``FPGA0``), its model, or its type (``FPGA``:
    every FPGA of the node).

    :raises: InvalidParameterValue naming the selector and the devices
        there are.
    """
    wanted = _norm(selector)
    devices = document["devices"]
    for key in (lambda d: d["id"],
                lambda d: (d.get("redfish_uri") or "").rstrip("/")
                .rsplit("/", 1)[-1],
                lambda d: d.get("model"),
                lambda d: d["type"]):
        found = [d for d in devices if _norm(key(d)) == wanted]
        if found:
            return found
    there = ", ".join(f"{d['id']} ({d['type']}, {d.get('model')})"
                      for d in devices) or "none"
    raise exception.InvalidParameterValue(
        f"accelerator {selector!r} matches no device of node {node.uuid}; "
        f"devices: {there}")
