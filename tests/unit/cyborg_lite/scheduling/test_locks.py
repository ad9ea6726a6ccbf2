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

"""The lock a region shows the scheduler, and the groups Nova reads."""

import datetime
import types

from accel_common import inventory
from cyborg_lite.scheduling import locks

NLB0 = "CUSTOM_ACCEL_LOCKED_FN_NLB0"
NLB3 = "CUSTOM_ACCEL_LOCKED_FN_NLB3"
EMPTY = "CUSTOM_ACCEL_LOCKED_EMPTY"


def _region(state="ready", function_id=None, bitstream_id=None,
            target=None, retired=False, kept_for=None, kept_until=None):
    return types.SimpleNamespace(
        state=state, function_id=function_id, bitstream_id=bitstream_id,
        target_function_id=target, target_bitstream_id=None,
        retired=retired, assigned_function_id=kept_for,
        assigned_bitstream_id=None, assigned_until=kept_until)


def test_lock_traits_name_what_the_region_is_locked_to():
    assert inventory.lock_trait("nlb0") == NLB0
    assert inventory.lock_trait("nlb-0.v2") == (
        "CUSTOM_ACCEL_LOCKED_FN_NLB_0_V2")
    assert inventory.lock_trait(bitstream_id="ab-12") == (
        "CUSTOM_ACCEL_LOCKED_BS_AB_12")
    assert inventory.lock_trait() == EMPTY


def test_a_long_function_id_gives_a_trait_placement_accepts():
    long_one = inventory.lock_trait("f" * 255)
    other = inventory.lock_trait("f" * 254 + "g")
    assert len(long_one) == 255 and len(other) == 255
    assert long_one != other
    assert long_one.startswith(inventory.LOCK_TRAIT_PREFIX + "FN_FFF")


def test_a_region_is_locked_while_a_handle_is_in_use_or_it_is_programmed():
    assert locks.region_lock(_region(function_id="nlb0"), 0) is None
    assert locks.region_lock(_region(function_id="nlb0"), 1) == NLB0
    assert locks.region_lock(_region(), 2) == EMPTY
    assert locks.region_lock(_region("programming", target="nlb3"), 0) == (
        NLB3)
    # In error or retired: reserved = total keeps the scheduler away.
    assert locks.region_lock(_region("error"), 1) is None
    assert locks.region_lock(_region(function_id="x", retired=True),
                             1) is None


def test_a_function_group_forbids_every_other_content():
    contents = {("nlb0", "img-nlb0"), (None, None), ("nlb3", None)}
    groups = [{"resources:FPGA": "1", "accel:function_id": "nlb3"},
              {"resources:FPGA": "1"}]

    answer = locks.scheduling_groups(groups, contents)

    assert answer[0] == {
        f"trait:{EMPTY}": "forbidden", f"trait:{NLB0}": "forbidden",
        "resources:FPGA": "1", "accel:function_id": "nlb3"}
    assert answer[1] == groups[1]
    assert groups[0] == {"resources:FPGA": "1", "accel:function_id": "nlb3"}
    assert locks.forbidden_traits(groups, contents) == {EMPTY, NLB0}


def test_a_bitstream_group_may_share_a_region_loaded_from_that_image():
    contents = {("nlb0", "img-nlb0"), ("gzip", "img-gzip")}
    group = {"resources:FPGA": "1", "accel:bitstream_id": "img-nlb0"}

    (answer,) = locks.scheduling_groups([group], contents)

    assert f"trait:{NLB0}" not in answer
    assert answer["trait:CUSTOM_ACCEL_LOCKED_FN_GZIP"] == "forbidden"
    assert answer[f"trait:{EMPTY}"] == "forbidden"


def test_a_key_the_user_wrote_is_kept():
    group = {"resources:FPGA": "1", "accel:function_id": "nlb3",
             f"trait:{NLB0}": "required"}
    (answer,) = locks.scheduling_groups([group], {("nlb0", None)})
    assert answer[f"trait:{NLB0}"] == "required"


def test_an_idle_region_kept_by_routing_is_locked_until_the_keep_ends():
    now = datetime.datetime(2026, 11, 25, 12, 0)
    later = now + datetime.timedelta(seconds=60)
    kept = _region(kept_for="nlb3", kept_until=later)
    assert locks.region_lock(kept, 0, now) == NLB3
    assert locks.region_lock(kept, 0, later) is None
    # Kept for boots asking for no function: the empty lock.
    assert locks.region_lock(_region(kept_until=later), 0, now) == EMPTY
    # In use, the region is locked by what it runs.
    assert locks.region_lock(
        _region(function_id="nlb3", kept_for="nlb3", kept_until=later),
        1, later) == NLB3


def test_an_answer_waits_for_the_lock_traits_it_relies_on():
    """Regions whose trait no API process recorded as written (just kept,
    or another lookup still writing it) are written before the answer."""
    traits = locks.LockTraits(db=None, providers=None)
    synced = []
    traits.sync = lambda ids: synced.append(sorted(ids)) or []

    failed = traits.ensure_written({
        "rp-a": (1, NLB0, NLB0), "rp-b": (2, NLB0, NLB3),
        "rp-c": (3, NLB0, None)})

    assert failed == []
    assert synced == [[2, 3]]
    synced.clear()
    assert traits.ensure_written({"rp-a": (1, NLB0, NLB0)}) == []
    assert synced == []
