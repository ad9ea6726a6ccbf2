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

"""Which groups lookup routing takes, and which idle region it keeps."""

import types

from cyborg_lite.scheduling import routing

NLB0 = "CUSTOM_ACCEL_LOCKED_FN_NLB0"
EMPTY = "CUSTOM_ACCEL_LOCKED_EMPTY"


def test_groups_of_one_resource_class_are_routed_by_their_function():
    assert routing.spec_of({"resources:FPGA": "1",
                            "accel:function_id": "nlb0"}) == routing.Spec(
        "FPGA", 1, ("nlb0", None))
    assert routing.spec_of({"resources:FPGA": "2",
                            "trait:CUSTOM_FPGA_INTEL": "required"}) == (
        routing.Spec("FPGA", 2, None))


def test_function_pools_are_counted_against_their_function_not_routed():
    # The profile requires the function's trait: its boots may go to any
    # region loaded with it, and count against that function's handles.
    assert routing.spec_of({
        "resources:FPGA": "1", "accel:function_id": "nlb0",
        "trait:CUSTOM_FPGA_FUNCTION_ID_INTEL_NLB0": "required"}) == (
        routing.Spec("FPGA", 1, ("nlb0", None),
                     pool_trait="CUSTOM_FPGA_FUNCTION_ID_INTEL_NLB0"))
    # Without the function named, what it counts against is unknown.
    assert routing.spec_of({
        "resources:FPGA": "1",
        "trait:CUSTOM_FPGA_FUNCTION_ID_INTEL_NLB0": "required"}) is None


def test_groups_that_choose_their_regions_themselves_are_not_routed():
    assert routing.spec_of({"resources:FPGA": "1",
                            f"trait:{NLB0}": "required"}) is None
    assert routing.spec_of({"resources:FPGA": "1",
                            "accel:bitstream_id": "b1"}) is None
    assert routing.spec_of({"resources:FPGA": "1",
                            "resources:CUSTOM_X": "1"}) is None


def test_nova_conductors_lookups_are_moves():
    # keystoneauth puts the process's name first (nova-conductor reads a
    # profile only for an evacuate or an unshelve); nova-api's lookup is a
    # boot's, whatever server runs it.
    assert routing.is_move("nova-conductor keystoneauth1/5.18.1 "
                           "python-requests/2.34.2 CPython/3.11.7")
    assert routing.is_move("nova-conductor/34.0.0 keystoneauth1/5.18.1")
    assert not routing.is_move("gunicorn keystoneauth1/5.18.1")
    assert not routing.is_move("nova-api keystoneauth1/5.18.1")
    assert not routing.is_move("python-requests/2.34.2 nova-conductor")
    assert not routing.is_move(None)


def test_own_traits_leave_the_lock_traits_out():
    assert routing.own_traits({
        "resources:FPGA": "1", "trait:CUSTOM_FPGA_INTEL": "required",
        "trait:CUSTOM_SLOW": "forbidden",
        f"trait:{NLB0}": "forbidden"}) == ["CUSTOM_FPGA_INTEL",
                                           "!CUSTOM_SLOW"]


def _region(rid, host, lock=None, function_id=None, total=4, in_use=0,
            mode="dynamic", device=None):
    deployable = types.SimpleNamespace(
        id=rid, uuid=f"r{rid}", state="ready", function_id=function_id,
        bitstream_id=None)
    dev = types.SimpleNamespace(id=device or rid, hostname=host,
                                program_mode=mode)
    return routing._Region(deployable, dev, total, in_use, lock)


def test_spare_handles_are_free_handles_less_the_boots_routed_there():
    found = [_region(1, "h1", NLB0, "nlb0", in_use=1),
             _region(2, "h2", NLB0, "nlb0"), _region(3, "h2")]
    spare = routing._spare(found, {NLB0: 5, EMPTY: 1})
    assert spare[NLB0] == 3 + 4 - 5
    assert spare[EMPTY] == -1


def test_a_new_region_for_a_content_goes_to_a_host_without_one():
    found = [_region(1, "h1", NLB0, "nlb0", in_use=4),
             _region(2, "h1", function_id="nlb0"), _region(3, "h2")]
    # h1's idle region runs nlb0 already, but h1 has a region of nlb0:
    # Nova claims only the first candidate of a host.
    assert [r.deployable.id for r in routing._idle_unit(
        found, ("nlb0", None))] == [3]


def test_an_idle_region_loaded_with_the_function_is_kept_first():
    found = [_region(1, "h1"), _region(2, "h2", function_id="nlb0")]
    assert [r.deployable.id for r in routing._idle_unit(
        found, ("nlb0", None))] == [2]
    # For no function, the empty one.
    assert [r.deployable.id for r in routing._idle_unit(
        found, None)] == [1]


def test_a_second_region_for_boots_without_function_goes_to_another_host():
    found = [_region(1, "h1", EMPTY, in_use=4), _region(2, "h1"),
             _region(3, "h2"), _region(4, "h2")]
    assert [r.deployable.id for r in routing._idle_unit(
        found, None)] == [3]


def test_a_single_mode_device_is_kept_whole_or_not_at_all():
    found = [_region(1, "h1", mode="single", device=9),
             _region(2, "h1", NLB0, "nlb0", in_use=1, mode="single",
                     device=9),
             _region(3, "h2", mode="single", device=8),
             _region(4, "h2", mode="single", device=8)]
    assert [r.deployable.id for r in routing._idle_unit(
        found, ("nlb3", None))] == [3, 4]


def test_a_region_for_no_function_serves_what_it_loaded_and_spreads_so():
    # Every region runs a function already: the region kept for boots
    # asking for none serves nlb0 there, so not beside h1's nlb0 region.
    found = [_region(1, "h1", NLB0, "nlb0", in_use=4),
             _region(2, "h1", function_id="nlb0"),
             _region(3, "h2", function_id="nlb0")]
    assert [r.deployable.id for r in routing._idle_unit(
        found, None)] == [3]


class _Placement:
    """Answers ``GET /resource_providers?required=`` and counts the
    calls."""

    def __init__(self, rps):
        self.rps = rps
        self.calls = 0

    def request(self, method, url, params=None):
        self.calls += 1
        return {"resource_providers": [{"uuid": rp} for rp in self.rps]}


def test_the_regions_with_a_groups_own_traits_are_read_once_a_minute(
        monkeypatch):
    router = routing.Router(conf=None, db=None, lock_traits=None)
    placement = _Placement({"r1", "r2"})
    group = {"resources:FPGA": "1", "trait:CUSTOM_FPGA_INTEL": "required"}
    clock = [1000.0]
    monkeypatch.setattr(routing.time, "monotonic", lambda: clock[0])

    assert router._eligible(placement, group) == {"r1", "r2"}
    placement.rps = {"r1", "r2", "r3"}
    clock[0] += routing.ELIGIBLE_TTL - 1
    assert router._eligible(placement, group) == {"r1", "r2"}
    assert placement.calls == 1
    clock[0] += 2
    assert router._eligible(placement, group) == {"r1", "r2", "r3"}
    assert placement.calls == 2
    # A group without traits of its own may go to any region: no call.
    assert router._eligible(placement, {"resources:FPGA": "1"}) is None
    assert placement.calls == 2
