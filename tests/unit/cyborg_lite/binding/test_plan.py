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

"""The bind's decision, without a database: facts in, decisions out."""

import types

from cyborg_lite import arq_states
from cyborg_lite import exception
from cyborg_lite.binding import plan
from cyborg_lite.db import binds as bind_db
from cyborg_lite.programming import exception as prog_exception

Action = plan.Action
FIELDS = {"hostname": "h1", "device_rp_uuid": "rp-1", "instance_uuid": "i1"}


def _arq(state=arq_states.INITIAL, uuid="a1", **bound):
    values = dict(hostname=None, device_rp_uuid=None, instance_uuid=None,
                  project_id="p1", deployable_id=None)
    values.update(bound)
    return types.SimpleNamespace(id=1, uuid=uuid, state=state, **values)


def _region(state="ready", function_id=None, status="enabled", locked=True,
            without_physnet=(), **target):
    deployable = types.SimpleNamespace(
        id=7, uuid="d-7", state=state, function_id=function_id,
        bitstream_id=None, target_function_id=target.get("function_id"),
        target_bitstream_id=None, assigned_until=None)
    device = types.SimpleNamespace(status=status, hostname="h1")
    return bind_db.Region(deployable, device, locked, without_physnet)


def _decide(arq, group, region, others=None, **policy):
    facts = bind_db.Facts({arq.uuid: (arq, group)}, others or {},
                          {arq.uuid: region})
    return plan.decide(facts, {arq.uuid: dict(FIELDS)},
                       plan.Policy(**policy))


def test_a_region_that_serves_the_group_binds_now():
    (decision,) = _decide(_arq(), {}, _region())
    assert decision.action is Action.BIND
    assert decision.arq_uuid == "a1"


def test_the_same_bind_again_is_a_repeat():
    arq = _arq(arq_states.BOUND, **FIELDS)
    (decision,) = _decide(arq, {}, _region())
    assert decision.action is Action.REPEAT


def test_an_arq_bound_to_another_instance_is_refused():
    arq = _arq(arq_states.BOUND, **dict(FIELDS, instance_uuid="i2"))
    (decision,) = _decide(arq, {}, _region())
    assert decision.action is Action.REFUSE
    assert isinstance(decision.reason, exception.ARQBadState)


def test_an_unknown_provider_is_refused():
    (decision,) = _decide(_arq(), {}, None)
    assert isinstance(decision.reason, exception.ResourceProviderNotFound)


def test_a_nic_handle_without_physnet_is_refused():
    (decision,) = _decide(_arq(), {}, _region(without_physnet=("0:1",)))
    assert decision.action is Action.REFUSE
    assert isinstance(decision.reason, exception.NICHandleWithoutPhysnet)


def test_a_region_read_without_its_lock_and_not_ready_is_read_again():
    (decision,) = _decide(_arq(), {}, _region("error", locked=False))
    assert decision.action is Action.RECHECK


def test_a_group_asking_nothing_joins_a_run_under_way():
    region = _region("programming")
    (decision,) = _decide(_arq(), {}, region, programming=True)
    assert decision.action is Action.JOIN


def test_a_region_in_error_moves_to_a_sibling_or_is_refused():
    (moved,) = _decide(_arq(), {}, _region("error"), siblings=True)
    assert moved.action is Action.MOVE
    assert isinstance(moved.reason, exception.DeployableNotReady)
    (refused,) = _decide(_arq(), {}, _region("error"))
    assert refused.action is Action.REFUSE


def test_a_function_not_loaded_is_programmed_when_a_programmer_runs():
    group = {"accel:function_id": "nlb0"}
    (decision,) = _decide(_arq(), group, _region(function_id="nlb3"),
                          programming=True)
    assert decision.action is Action.PROGRAM
    assert plan.asked(decision) == ("nlb0", None)
    (refused,) = _decide(_arq(), group, _region(function_id="nlb3"))
    assert isinstance(refused.reason, exception.ProgrammingUnavailable)


def test_a_refusal_of_the_database_may_move_to_a_sibling():
    (decision,) = _decide(_arq(), {}, _region())
    cause = prog_exception.RegionBusy(deployable="d", arq="a1", asked="x",
                                      target="y")
    policy = plan.Policy(siblings=True)
    assert plan.refused(decision, cause, policy).action is Action.MOVE
    other = exception.ARQBadState(uuid="a1", state="Bound", action="x",
                                  expected="y")
    assert plan.refused(decision, other, policy).action is Action.REFUSE


def test_leftovers_of_a_rescheduled_build_are_unbound_first():
    old = _arq(arq_states.BOUND, uuid="a0", hostname="h0",
               device_rp_uuid="rp-0", instance_uuid="i1")
    decisions = _decide(_arq(), {}, _region(), others={"i1": [old]})
    assert [d.action for d in decisions] == [Action.UNBIND, Action.BIND]


def test_an_instance_bound_on_the_same_host_refuses_more():
    old = _arq(arq_states.BOUND, uuid="a0", **FIELDS)
    (decision,) = _decide(_arq(), {}, _region(), others={"i1": [old]})
    assert isinstance(decision.reason, plan.InstanceAlreadyBound)


def test_a_missing_arq_is_refused_before_anything_else():
    facts = bind_db.Facts({}, {}, {})
    (decision,) = plan.decide(facts, {"a1": dict(FIELDS)}, plan.Policy())
    assert isinstance(decision.reason, exception.ARQNotFound)
