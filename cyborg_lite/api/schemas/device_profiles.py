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


"""Device profile bodies and the group rules of CONTRACT.md §3."""

import re

from cyborg_lite import exception

NAME_PATTERN = r"^[a-zA-Z0-9-_]+$"

#: resource classes real Cyborg accepts besides any CUSTOM_*.
RESOURCE_CLASSES = ("FPGA", "GPU", "VGPU", "PGPU", "CUSTOM_QAT",
                    "CUSTOM_NIC", "CUSTOM_SSD")

TRAIT_VALUES = ("required", "forbidden")

_PROFILE = {
    "type": "object",
    "required": ["name", "groups"],
    "properties": {
        "name": {"type": "string", "pattern": NAME_PATTERN,
                 "maxLength": 255},
        "description": {"type": ["string", "null"], "maxLength": 65535},
        "uuid": {"type": "string", "format": "uuid",
                 "pattern": "^[0-9a-fA-F-]{32,36}$"},
        "groups": {
            "type": "array", "minItems": 1,
            "items": {"type": "object", "minProperties": 1,
                      "additionalProperties": {
                          "type": ["string", "integer"]}},
        },
    },
}

#: POST /v2/device_profiles: a list of exactly one profile.
CREATE = {"type": "array", "minItems": 1, "maxItems": 1, "items": _PROFILE}


def _check_resource(where, rc, amount):
    rc = rc.strip()
    if rc not in RESOURCE_CLASSES and not re.fullmatch(r"CUSTOM_[A-Z0-9_]+",
                                                       rc):
        raise exception.Invalid(
            reason=f"{where}: resource class {rc!r} is not one of "
                   f"{', '.join(RESOURCE_CLASSES)} or CUSTOM_*")
    try:
        count = int(amount)
    except ValueError:
        raise exception.Invalid(
            reason=f"{where}: amount {amount!r} is not an integer")
    if count < 1:
        raise exception.Invalid(
            reason=f"{where}: amount must be at least 1, got {count}")


def check_groups(groups):
    """Apply the group-key rules real Cyborg applies (and a few it forgets).

    :param groups: list of dicts, values already strings.
    :raises Invalid: naming the group and key.
    """
    for index, group in enumerate(groups):
        for key, value in group.items():
            where = f"body[0].groups[{index}][{key!r}]"
            kind, sep, rest = key.partition(":")
            if not sep or kind not in ("resources", "trait", "accel"):
                raise exception.Invalid(
                    reason=f"{where}: keys must start with 'resources:', "
                           "'trait:' or 'accel:'")
            if kind == "resources":
                _check_resource(where, rest, value)
            elif kind == "trait":
                if not re.fullmatch(r"CUSTOM_[A-Z0-9_]+", rest):
                    raise exception.Invalid(
                        reason=f"{where}: traits must be CUSTOM_ traits "
                               "([A-Z0-9_])")
                if value not in TRAIT_VALUES:
                    raise exception.Invalid(
                        reason=f"{where}: trait value must be 'required' "
                               f"or 'forbidden', got {value!r}")
        if "accel:bitstream_id" in group and "accel:function_id" in group:
            raise exception.Invalid(
                reason=f"body[0].groups[{index}]: accel:bitstream_id and "
                       "accel:function_id are mutually exclusive")


def normalize_groups(groups):
    """Groups with every value stored as a string, as Cyborg stores them."""
    return [{key.strip(): str(value) for key, value in group.items()}
            for group in groups]


def group_amount(group):
    """Σ of the ``resources:*`` amounts of one group: its ARQ count."""
    return sum(int(value) for key, value in group.items()
               if key.startswith("resources:"))
