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


"""Attribute bodies: POST /v2/attributes."""

from cyborg_lite.db import models

#: a deployable's integer id (as real Cyborg takes it) or its uuid (what
#: every other API object shows); which deployable it names is checked by
#: the database layer, with a message saying so. No longer than a uuid:
#: an integer id has at most 19 digits, and a string of thousands of
#: digits never reaches int().
DEPLOYABLE_REF = {"type": ["integer", "string"], "minLength": 1,
                  "maxLength": models.Deployable.uuid.type.length}

#: POST /v2/attributes
CREATE = {
    "type": "object",
    "required": ["deployable_id", "key", "value"],
    "properties": {
        "deployable_id": DEPLOYABLE_REF,
        "key": {"type": "string", "minLength": 1,
                "maxLength": models.Attribute.key.type.length,
                "pattern": r"^\S(.*\S)?$"},
        "value": {"type": "string",
                  "maxLength": models.Attribute.value.type.length},
    },
    "additionalProperties": False,
}
