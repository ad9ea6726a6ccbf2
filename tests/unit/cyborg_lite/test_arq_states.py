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


"""The ARQ state machine table (:mod:`cyborg_lite.arq_states`)."""

import pytest

from cyborg_lite import arq_states as states


@pytest.mark.parametrize("current, target", [
    ("Initial", "BindStarted"), ("Unbound", "BindStarted"),
    ("BindStarted", "Bound"), ("BindStarted", "BindFailed"),
    ("Bound", "BindFailed"), ("Bound", "Unbound"), ("Initial", "Unbound"),
    ("BindFailed", "Unbound"), ("Bound", "Deleting"),
    ("Initial", "Deleting"),
])
def test_allowed_transitions(current, target):
    assert states.can_move(current, target)


@pytest.mark.parametrize("current, target", [
    ("Bound", "BindStarted"), ("BindFailed", "BindStarted"),
    ("Initial", "Bound"), ("Unbound", "Bound"), ("Deleting", "Unbound"),
    ("Deleting", "BindStarted"),
])
def test_forbidden_transitions(current, target):
    assert not states.can_move(current, target)


def test_every_state_may_repeat_itself():
    for state in states.TRANSITIONS:
        assert states.can_move(state, state)


def test_resolved_states_and_nova_statuses():
    assert set(states.RESOLVED) == {"Bound", "BindFailed", "Deleting"}
    assert states.NOVA_EVENT_STATUS["Bound"] == "completed"
    assert states.NOVA_EVENT_STATUS["BindFailed"] == "failed"
    assert set(states.BINDABLE) == {"Initial", "Unbound"}
