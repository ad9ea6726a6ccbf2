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

"""The ARQ states and their transitions, in one place.

Constants only, importable from any layer. The database layer applies a
transition (:func:`cyborg_lite.db.arqs.move`) as one conditional ``UPDATE
arqs ... WHERE id = :id AND state IN (<allowed predecessors>)``: the row is
the lock, so two API workers (or two hosts) can never both move the same
ARQ. Each step is idempotent: asking for the state an ARQ is already in
succeeds and changes nothing.
"""

INITIAL = "Initial"
BIND_STARTED = "BindStarted"
BOUND = "Bound"
UNBOUND = "Unbound"
BIND_FAILED = "BindFailed"
UNBIND_FAILED = "UnbindFailed"
DELETING = "Deleting"

ALL = (INITIAL, BIND_STARTED, BOUND, UNBOUND, BIND_FAILED, UNBIND_FAILED,
       DELETING)

#: target state -> the states it may be entered from.
TRANSITIONS = {
    BIND_STARTED: (INITIAL, UNBOUND),
    BOUND: (BIND_STARTED,),
    # NOTE(cyborg_lite): a PATCH that fails while reserving rolls back its
    # BindStarted, so the ARQ is failed from the state it started in.
    BIND_FAILED: (BIND_STARTED, BOUND, INITIAL, UNBOUND),
    UNBOUND: (INITIAL, BIND_STARTED, BOUND, BIND_FAILED, UNBIND_FAILED),
    UNBIND_FAILED: (BIND_STARTED, BOUND, BIND_FAILED),
    DELETING: ALL,
}

#: states a bind may start from.
BINDABLE = TRANSITIONS[BIND_STARTED]

#: states Nova treats as "resolved" (GET ?bind_state=resolved).
RESOLVED = (BOUND, BIND_FAILED, DELETING)

#: ARQ state -> status of the accelerator-request-bound event.
NOVA_EVENT_STATUS = {BOUND: "completed", BIND_FAILED: "failed",
                     DELETING: "failed"}


def can_move(current, target):
    """True when an ARQ in ``current`` may move to ``target``."""
    return current == target or current in TRANSITIONS[target]
