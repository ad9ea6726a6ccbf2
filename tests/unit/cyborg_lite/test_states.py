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


"""The named states: each member is the very string the database holds
and the API shows, and each is documented."""

import enum
import inspect
import json

import pytest

from accel_common import inventory
from cyborg_lite import states

ENUMS = [states.DeviceStatus, states.RegionState, states.Notification,
         inventory.Health]


@pytest.mark.parametrize("cls", ENUMS, ids=lambda c: c.__name__)
def test_members_are_their_strings(cls):
    assert issubclass(cls, enum.StrEnum)
    for member in cls:
        assert member == member.value
        assert str(member) == member.value
        assert json.dumps(member) == json.dumps(member.value)
        assert {member.value: 1}[member] == 1


@pytest.mark.parametrize("cls", ENUMS, ids=lambda c: c.__name__)
def test_every_member_has_a_doc_comment(cls):
    lines, _ = inspect.getsourcelines(cls)
    for member in cls:
        at = next(i for i, line in enumerate(lines)
                  if line.strip().startswith(f"{member.name} = "))
        assert lines[at - 1].strip().startswith("#:"), member.name


def test_health_values_are_best_first():
    assert inventory.HEALTH_VALUES == ("OK", "Warning", "Critical")
