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


"""Device profile bodies and the rules of their groups (the API
reference, doc/source/reference/api.rst, "Device profiles")."""

import re
import unicodedata

from cyborg_lite import exception
from cyborg_lite.api import validation
from cyborg_lite.db import models

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
                 "maxLength": models.DeviceProfile.name.type.length},
        # NOTE(cyborg_lite): bounded in bytes by check_description.
        "description": {"type": ["string", "null"]},
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


_AMOUNT = re.compile(r"\s*\+?([0-9]+)\s*")


def parse_amount(where, amount):
    """A ``resources:`` amount: an integer, or a string of ASCII digits.

    :raises Invalid: naming ``where``.
    """
    match = _AMOUNT.fullmatch(str(amount))
    if isinstance(amount, bool) or not match:
        raise exception.Invalid(
            reason=f"{where}: amount {amount!r} is not an integer")
    count = validation.integer_id(match.group(1))
    if count is None:
        raise exception.Invalid(
            reason=f"{where}: amount is larger than a 64-bit integer")
    return count


#: the column each stored group value ends up in when a bind uses it.
VALUE_COLUMNS = {"accel:function_id": models.Deployable.target_function_id,
                 "accel:bitstream_id": models.Deployable.target_bitstream_id}
#: resource class and trait names: the column the deployable's resource
#: class is stored in (Placement's own names are as long).
NAME_COLUMN = models.Deployable.resource_class


def check_description(description):
    """:raises Invalid: when the description is longer than its column
    stores (UTF-8 bytes on MariaDB)."""
    if description is not None:
        validation.check_fits("body[0].description", description,
                              models.DeviceProfile.description)


def _check_resource(where, rc, amount):
    validation.check_fits(where, rc, NAME_COLUMN)
    if rc not in RESOURCE_CLASSES and not re.fullmatch(r"CUSTOM_[A-Z0-9_]+",
                                                       rc):
        raise exception.Invalid(
            reason=f"{where}: resource class {rc!r} is not one of "
                   f"{', '.join(RESOURCE_CLASSES)} or CUSTOM_*")
    count = parse_amount(where, amount)
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
                validation.check_fits(where, rest, NAME_COLUMN)
                if not re.fullmatch(r"CUSTOM_[A-Z0-9_]+", rest):
                    raise exception.Invalid(
                        reason=f"{where}: traits must be CUSTOM_ traits "
                               "([A-Z0-9_])")
                if value not in TRAIT_VALUES:
                    raise exception.Invalid(
                        reason=f"{where}: trait value must be 'required' "
                               f"or 'forbidden', got {value!r}")
            if key in VALUE_COLUMNS:
                validation.check_fits(where, value, VALUE_COLUMNS[key])
        if "accel:bitstream_id" in group and "accel:function_id" in group:
            raise exception.Invalid(
                reason=f"body[0].groups[{index}]: accel:bitstream_id and "
                       "accel:function_id are mutually exclusive")


GROUP_KEY_KINDS = ("resources", "trait", "accel")


def normalize_key(key):
    """A group key as real Cyborg stores it: ``resources: FPGA `` becomes
    ``resources:FPGA``, and the same for ``trait:``.

    Cyborg strips spaces around the name after the colon and keeps the
    rest; cyborg_lite does it for ``accel:`` keys too, where Cyborg keeps
    them as typed and so makes them keys nobody reads. Keys are first
    brought to Unicode NFKC form and every kind of whitespace is stripped
    (a no-break or ideographic space, a tab), so keys that only look alike
    (composed and decomposed accents, full-width letters) are one key.
    Keys of any other form are returned stripped, for
    :func:`check_groups` to refuse.
    """
    key = unicodedata.normalize("NFKC", key).strip()
    kind, sep, name = key.partition(":")
    if sep and kind.strip() in GROUP_KEY_KINDS:
        return f"{kind.strip()}:{name.strip()}"
    return key


def normalize_groups(groups):
    """Groups with normalised keys and every value a string, as Cyborg
    stores them.

    :raises Invalid: when two keys of one group normalise to the same key
        (Cyborg keeps the last one silently).
    """
    normalized = []
    for index, group in enumerate(groups):
        result = {}
        for key, value in group.items():
            standard = normalize_key(key)
            if standard in result:
                raise exception.Invalid(
                    reason=f"body[0].groups[{index}]: keys {key!r} and "
                           f"another both mean {standard!r}")
            result[standard] = str(value)
        normalized.append(result)
    return normalized


def group_amount(group):
    """Σ of the ``resources:*`` amounts of one group: its ARQ count."""
    return sum(parse_amount(f"resources amount {key!r}", value)
               for key, value in group.items()
               if key.startswith("resources:"))


def check_total(groups, limit):
    """Refuse a profile whose groups ask for more than ``limit`` ARQs in
    all (``[api] max_arqs_per_request``): checked when the profile is
    created and again before its ARQs are.

    :raises Invalid: saying how many and the limit.
    """
    total = sum(group_amount(group) for group in groups)
    if total > limit:
        raise exception.Invalid(
            reason=f"the device profile asks for {total} accelerator "
                   f"requests; one request may create at most {limit} "
                   "([api] max_arqs_per_request)")
    return total
