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

"""The import plan of inconsistent Cyborg databases (no database: rows as
real Cyborg 17 wrote them, see tests/data/cyborg17, then broken)."""

from cyborg_lite.cyborg_import import plan
from cyborg_lite.cyborg_import import reader
from cyborg_lite.cyborg_import import schema
from tests.data.cyborg17 import vgpu as cyborg17_vgpu
from tests.fixtures import cyborg17

CYBORG_17 = schema.Schema("b47c8f2d1e3a", "2026.2 (Cyborg 17)", True)
BOUND_ONE = "cc600de7-29bc-448f-8a11-5cf9a2ee4cef"


def _plan(rows=None, existing=None, **kwargs):
    source = reader.Source(CYBORG_17, rows or cyborg17.recording())
    return plan.make(source, existing or plan.Existing(), **kwargs)


def _arq(result, uuid):
    return next(a for a in result.rows["accelerator_requests"]
                if a["uuid"] == uuid)


def _handle(result, uuid):
    return next(h for h in result.rows["attach_handles"]
                if h["uuid"] == uuid)


def test_recording_imports_everything_with_cyborg_identity():
    result = _plan()
    assert result.can_apply and not result.refused
    assert {k: len(v) for k, v in result.rows.items()} == {
        "device_profiles": 2, "devices": 1, "deployables": 1,
        "attributes": 2, "attach_handles": 16, "accelerator_requests": 5}
    deployable = result.rows["deployables"][0]
    assert deployable["rp_uuid"] == cyborg17.FAKE_RP
    assert deployable["resource_class"] == "FPGA"
    assert deployable["region_id"].startswith(plan.PREFIX)
    assert result.rows["devices"][0]["pci_address"] == "0000:0c:00.0"
    held = [h for h in result.rows["attach_handles"] if h["in_use"]]
    assert sorted(h["arq_uuid"] for h in held) == sorted(
        a["uuid"] for a in result.rows["accelerator_requests"]
        if a["state"] == "Bound")


def test_stuck_bind_started_becomes_bind_failed_with_a_line():
    result = _plan()
    stuck = [a for a in cyborg17.recording()[
        "extended_accelerator_requests"] if a["state"] == "BindStarted"]
    assert len(stuck) == 1
    arq = _arq(result, stuck[0]["uuid"])
    assert arq["state"] == "BindFailed"
    assert arq["instance_uuid"] == stuck[0]["instance_uuid"]
    assert any(stuck[0]["uuid"] in line and "BindStarted" in line
               for line in result.settled)


def test_handle_in_use_by_no_arq_is_kept_in_use_unless_asked():
    rows = cyborg17.recording()
    orphan = rows["attach_handles"][10]
    orphan["in_use"] = True
    kept = _plan(rows)
    assert _handle(kept, orphan["uuid"])["in_use"] is True
    assert _handle(kept, orphan["uuid"])["arq_uuid"] is None
    assert any(orphan["uuid"] in line and "in use by no ARQ" in line
               for line in kept.settled)
    freed = _plan(rows, free_orphan_handles=True)
    assert _handle(freed, orphan["uuid"])["in_use"] is False


def test_bound_arq_on_a_deleted_deployable_becomes_bind_failed():
    rows = cyborg17.recording()
    arq = next(a for a in rows["extended_accelerator_requests"]
               if a["uuid"] == BOUND_ONE)
    arq["deployable_id"] = 99
    arq["attach_handle_id"] = None
    result = _plan(rows)
    assert _arq(result, BOUND_ONE)["state"] == "BindFailed"
    assert any(BOUND_ONE in line and "deployable id 99" in line
               for line in result.settled)
    # its handle was still marked in use: kept so, and said
    assert any("in use by no ARQ" in line for line in result.settled)


def test_bound_arq_with_a_handle_not_marked_in_use_takes_it():
    rows = cyborg17.recording()
    arq = next(a for a in rows["extended_accelerator_requests"]
               if a["uuid"] == BOUND_ONE)
    handle = next(h for h in rows["attach_handles"]
                  if h["id"] == arq["attach_handle_id"])
    handle["in_use"] = False
    result = _plan(rows)
    assert _handle(result, handle["uuid"])["in_use"] is True
    assert _handle(result, handle["uuid"])["arq_uuid"] == BOUND_ONE


def test_two_arqs_holding_one_handle_are_refused():
    rows = cyborg17.recording()
    bound = [a for a in rows["extended_accelerator_requests"]
             if a["state"] == "Bound"]
    bound[1]["attach_handle_id"] = bound[0]["attach_handle_id"]
    result = _plan(rows)
    assert not result.can_apply
    assert any("held by 2 Bound ARQs" in line for line in result.refused)


def test_same_profile_under_another_uuid_is_reused():
    rows = cyborg17.recording()
    profile = rows["device_profiles"][0]
    groups = [{"resources:FPGA": "1",
               "trait:CUSTOM_FAKE_DEVICE": "required"}]
    existing = plan.Existing(profiles={"lite-uuid": (profile["name"],
                                                     groups)},
                             profile_names={profile["name"]: "lite-uuid"})
    result = _plan(rows, existing)
    assert result.can_apply
    assert len(result.rows["device_profiles"]) == 1
    uses = {a["profile_uuid"] for a in result.rows["accelerator_requests"]
            if a["device_profile_name"] == profile["name"]}
    assert uses == {"lite-uuid"}


def test_other_profile_of_the_same_name_is_refused():
    profile = cyborg17.recording()["device_profiles"][0]
    existing = plan.Existing(
        profiles={"lite-uuid": (profile["name"], [{"resources:GPU": "1"}])},
        profile_names={profile["name"]: "lite-uuid"})
    result = _plan(existing=existing)
    assert not result.can_apply
    assert any("rename one of them" in line for line in result.refused)


def test_provider_owned_by_another_deployable_is_refused():
    existing = plan.Existing(rp_uuids={cyborg17.FAKE_RP: "other"})
    result = _plan(existing=existing)
    assert not result.can_apply
    assert any(cyborg17.FAKE_RP in line for line in result.refused)


def test_deployable_without_provider_is_left_out_with_its_arqs_failed():
    rows = cyborg17.recording()
    rows["deployables"][0]["rp_uuid"] = None
    result = _plan(rows)
    assert not result.rows["deployables"]
    assert not result.rows["attach_handles"]
    assert _arq(result, BOUND_ONE)["state"] == "BindFailed"
    assert any("has no resource provider" in line
               for line in result.settled)


def test_everything_imported_before_plans_nothing_even_when_deleted():
    first = _plan()
    existing = plan.Existing()
    for kind, items in first.rows.items():
        existing.imported[kind] = {values["uuid"] for values in items}
    again = _plan(existing=existing)
    assert again.empty and again.can_apply
    assert again.before["accelerator_requests"] == 5
    assert again.lines()[-1] == (
        "Nothing to import: everything was imported before.")


def test_mdev_handle_takes_its_address_from_the_controlpath():
    rows = cyborg17.recording()
    handle = rows["attach_handles"][15]
    handle["attach_type"] = "MDEV"
    handle["attach_info"] = ('{"asked_type": "nvidia-223", '
                             '"vgpu_mark": "nvidia-223_0"}')
    result = _plan(rows)
    planned = _handle(result, handle["uuid"])
    assert (planned["pci_address"], planned["mdev_type"]) == (
        "0000:0c:00.0", "nvidia-223")
    assert any("Cyborg's vgpu_mark (e.g. nvidia-223_0)" in line
               for line in result.settled)


def test_vgpu_handles_are_one_instance_each_with_cyborg_uuids():
    rows = cyborg17.recording()
    vgpu = cyborg17_vgpu.add(rows, "realcyborg-local")
    result = _plan(rows)
    assert result.can_apply, result.refused
    handles = [h for h in result.rows["attach_handles"]
               if h["deployable_uuid"] == vgpu["deployable"]]
    assert [(h["uuid"], h["pci_address"], h["mdev_type"], h["mdev_index"])
            for h in handles] == [
        (uuid, cyborg17_vgpu.ADDRESS, cyborg17_vgpu.MDEV_TYPE, index)
        for index, uuid in enumerate(vgpu["handles"])]
    held = {h["arq_uuid"]: h["uuid"] for h in handles if h["in_use"]}
    assert held == vgpu["arqs"]
    for arq_uuid, handle_uuid in vgpu["arqs"].items():
        arq = _arq(result, arq_uuid)
        assert (arq["state"], arq["handle_uuid"]) == ("Bound", handle_uuid)
    (line,) = [line for line in result.settled if "vgpu_mark" in line]
    assert line.startswith("4 MDEV attach handle(s)")


def test_vgpu_instances_follow_cyborg_marks_then_fill_free_indexes():
    rows = cyborg17.recording()
    vgpu = cyborg17_vgpu.add(rows, "realcyborg-local")
    handles = rows["attach_handles"][-4:]
    # Instance 3 was imported before; one mark is unreadable.
    first = handles.pop()
    existing = plan.Existing()
    existing.handle_uuids.add(first["uuid"])
    existing.deployable_uuids.add(vgpu["deployable"])
    existing.device_uuids.add(rows["devices"][-1]["uuid"])
    existing.handle_instances[(vgpu["deployable"], cyborg17_vgpu.ADDRESS,
                               cyborg17_vgpu.MDEV_TYPE)] = {3}
    handles[0]["attach_info"] = handles[0]["attach_info"].replace(
        '"nvidia-223_0"', '"nvidia-223_3"')
    result = _plan(rows, existing)
    assert result.can_apply, result.refused
    got = {h["uuid"]: h["mdev_index"] for h in result.rows["attach_handles"]
           if h["mdev_type"]}
    assert got == {handles[0]["uuid"]: 0, handles[1]["uuid"]: 1,
                   handles[2]["uuid"]: 2}


def test_second_pci_handle_at_one_address_is_refused():
    rows = cyborg17.recording()
    rows["attach_handles"][1]["attach_info"] = rows["attach_handles"][0][
        "attach_info"]
    result = _plan(rows)
    assert not result.can_apply
    assert any(rows["attach_handles"][1]["uuid"] in line
               and "has another handle at 0000:0c:00.1" in line
               for line in result.refused)


def test_unreadable_profile_json_is_refused():
    rows = cyborg17.recording()
    rows["device_profiles"][0]["profile_json"] = "[1, 2"
    result = _plan(rows)
    assert not result.can_apply
    assert any("profile_json is not JSON" in line for line in result.refused)
    assert result.lines()[-1].startswith("The import cannot be done")


def test_nic_handle_keeps_the_physical_network_cyborg_stored():
    rows = cyborg17.recording()
    rows["devices"][0]["type"] = "NIC"
    named, unnamed = rows["attach_handles"][0], rows["attach_handles"][1]
    # NOTE(test): as Cyborg's NIC driver writes it (utils.pci_str_to_json).
    named["attach_info"] = (
        '{"bus": "0c", "device": "0", "domain": "0000", "function": "1", '
        '"physical_network": "physnet1"}')
    result = _plan(rows)
    assert result.can_apply
    assert _handle(result, named["uuid"])["physical_network"] == "physnet1"
    assert _handle(result, unnamed["uuid"])["physical_network"] is None
    (line,) = [line for line in result.settled
               if "no physical_network" in line]
    assert line.startswith(f"{len(rows['attach_handles']) - 1} attach "
                           "handle(s) of NICs")
    assert unnamed["uuid"] in line and named["uuid"] not in line


def test_handles_of_other_devices_need_no_physical_network():
    result = _plan()
    assert not any("physical_network" in line for line in result.settled)
