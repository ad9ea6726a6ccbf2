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

"""Request bodies of /v2/deployables."""

#: ``PATCH /v2/deployables/{uuid}/program``, a JSON patch.
#: ``replace``/``add`` loads an image (``image_uuid``, as the SDK and OSC
#: send) or, an extension for standalone catalogs, a ``function_id``;
#: ``remove`` resets the region (no function; clears ``error``).
PROGRAM = {
    "type": "array",
    "minItems": 1,
    "maxItems": 1,
    "items": {
        "type": "object",
        "properties": {
            "path": {"type": "string", "pattern": r"^(/[\w-]+)+$"},
            "op": {"enum": ["add", "replace", "remove"]},
            "value": {
                "type": "array",
                "minItems": 1,
                "maxItems": 1,
                "items": {
                    "type": "object",
                    "properties": {
                        "image_uuid": {"type": "string", "minLength": 1,
                                       "maxLength": 36},
                        "function_id": {"type": "string", "minLength": 1,
                                        "maxLength": 255},
                    },
                    "minProperties": 1,
                    "maxProperties": 1,
                    "additionalProperties": False,
                },
            },
        },
        "required": ["path", "op"],
        "additionalProperties": False,
    },
}

#: paths real Cyborg refuses as internal.
INTERNAL_PATHS = ("/uuid", "/id", "/links", "/created_at", "/updated_at",
                  "/name", "/num_accelerators")


def parse_program(body):
    """``(function_id, bitstream_id, reset)`` from a validated body.

    :raises ValueError: with the reason, for a path other than /program or
        a missing value.
    """
    op = body[0]
    if op["path"] in INTERNAL_PATHS:
        raise ValueError(f"{op['path']} is an internal attribute and "
                         f"cannot be patched")
    if op["path"] != "/program":
        raise ValueError(f"only /program can be patched, got {op['path']}")
    if op["op"] == "remove":
        return None, None, True
    if "value" not in op:
        raise ValueError(f"op {op['op']} on /program needs a value: "
                         f"[{{\"image_uuid\": ...}}]")
    value = op["value"][0]
    return value.get("function_id"), value.get("image_uuid"), False
