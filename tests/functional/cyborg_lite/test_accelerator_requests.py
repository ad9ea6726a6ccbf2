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


"""Accelerator requests over HTTP: create, list, bind, unbind, delete."""

import json
import uuid

from tests.fixtures.cyborg import ADMIN
from tests.fixtures.cyborg import FPGA_REGION0_RP
from tests.fixtures.cyborg import GPU_RP
from tests.fixtures.cyborg import headers
from tests.fixtures.cyborg import MEMBER
from tests.fixtures.cyborg import NOVA
from tests.fixtures.cyborg import OTHER

ARQS = "/v2/accelerator_requests"


def fault(response):
    return json.loads(response.get_json()["error_message"])["faultstring"]


def _instance():
    return str(uuid.uuid4())


def _arqs(cyborg, amount=1, rc="FPGA", extra=None):
    group = {f"resources:{rc}": str(amount), **(extra or {})}
    profile = cyborg.create_profile([group])
    return profile, cyborg.create_arqs(profile["name"])


def _by_instance(cyborg, instance, caller=NOVA, **params):
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return cyborg.client.get(f"{ARQS}?instance={instance}"
                             + (f"&{query}" if query else ""),
                             headers=caller)


def test_create_sums_amounts_per_group_with_group_index(cyborg):
    profile = cyborg.create_profile([{"resources:FPGA": "2"},
                                     {"resources:PGPU": "1",
                                      "trait:CUSTOM_X": "required"}])
    arqs = cyborg.create_arqs(profile["name"])
    assert [a["device_profile_group_id"] for a in arqs] == [0, 0, 1]
    for arq in arqs:
        assert arq["state"] == "Initial"
        assert arq["attach_handle_type"] == ""
        assert arq["attach_handle_info"] == {}
        assert arq["attach_handle_uuid"] is None
        assert arq["project_id"] == "p1"
        assert arq["device_profile_name"] == profile["name"]


def test_create_unknown_profile_is_404(cyborg):
    response = cyborg.client.post(ARQS, headers=NOVA,
                                  json={"device_profile_name": "nope"})
    assert response.status_code == 404
    assert "nope" in fault(response)


def test_create_with_empty_profile_name_is_404_as_any_unknown_name(cyborg):
    response = cyborg.client.post(ARQS, headers=NOVA,
                                  json={"device_profile_name": ""})
    assert response.status_code == 404
    assert "could not be found" in fault(response)


def test_create_without_profile_name_is_400_not_500(cyborg):
    response = cyborg.client.post(ARQS, headers=NOVA, json={})
    assert response.status_code == 400
    assert "device_profile_name" in fault(response)
    response = cyborg.client.post(ARQS, headers=NOVA, data="not json")
    assert response.status_code == 400


def test_nova_bind_gives_202_empty_and_pci_handle_info(cyborg):
    _, arqs = _arqs(cyborg)
    instance = _instance()
    response = cyborg.bind([arqs[0]["uuid"]], FPGA_REGION0_RP, instance)
    assert response.status_code == 202
    assert response.get_data() == b""
    listed = _by_instance(cyborg, instance).get_json()["arqs"]
    assert len(listed) == 1
    arq = listed[0]
    assert arq["state"] == "Bound"
    assert arq["hostname"] == "compute-1.example.org"
    assert arq["device_rp_uuid"] == FPGA_REGION0_RP
    assert arq["instance_uuid"] == instance
    assert arq["attach_handle_type"] == "PCI"
    assert arq["attach_handle_info"] == {"domain": "0000", "bus": "5e",
                                         "device": "00", "function": "1"}
    assert uuid.UUID(arq["attach_handle_uuid"])


def test_bind_through_uuid_path_sdk_form(cyborg):
    _, arqs = _arqs(cyborg)
    arq = arqs[0]["uuid"]
    instance = _instance()
    body = {arq: [{"op": "add", "path": "/hostname", "value": "h"},
                  {"op": "add", "path": "/device_rp_uuid",
                   "value": GPU_RP},
                  {"op": "add", "path": "/instance_uuid",
                   "value": instance}]}
    response = cyborg.client.patch(f"{ARQS}/{arq}", headers=NOVA, json=body)
    assert response.status_code == 202
    shown = cyborg.client.get(f"{ARQS}/{arq}", headers=NOVA).get_json()
    assert shown["state"] == "Bound"
    assert shown["attach_handle_info"]["bus"] == "af"


def test_bind_without_service_token_is_403(cyborg):
    _, arqs = _arqs(cyborg)
    response = cyborg.bind([arqs[0]["uuid"]], FPGA_REGION0_RP, _instance(),
                           caller=MEMBER)
    assert response.status_code == 403
    # Cyborg's words, which cyborg-tempest-plugin looks for.
    assert "requires a service token" in fault(response)


def test_bind_validation_errors_are_400(cyborg):
    _, arqs = _arqs(cyborg)
    arq = arqs[0]["uuid"]
    cases = [
        [{"op": "add", "path": "/hostname", "value": "h"},
         {"op": "remove", "path": "/instance_uuid"}],
        [{"op": "add", "path": "/bogus", "value": "h"}],
        [{"op": "add", "path": "/hostname", "value": "h"}],
        [{"path": "/hostname", "value": "h"}],
        [{"op": "replace", "path": "/hostname", "value": "h"}],
        [{"op": "add", "path": "/hostname", "value": "h"},
         {"op": "add", "path": "/device_rp_uuid", "value": "not-a-uuid"},
         {"op": "add", "path": "/instance_uuid", "value": _instance()}],
    ]
    for ops in cases:
        response = cyborg.client.patch(ARQS, headers=NOVA, json={arq: ops})
        assert response.status_code == 400, ops
    response = cyborg.client.patch(ARQS, headers=NOVA, json=[1])
    assert response.status_code == 400
    assert cyborg.client.get(f"{ARQS}/{arq}",
                             headers=NOVA).get_json()["state"] == "Initial"


def test_absent_fields_message_names_them(cyborg):
    _, arqs = _arqs(cyborg)
    response = cyborg.client.patch(ARQS, headers=NOVA, json={
        arqs[0]["uuid"]: [{"op": "add", "path": "/hostname", "value": "h"}]})
    assert response.status_code == 400
    assert "/device_rp_uuid" in fault(response)


def test_project_id_op_needs_2_1_and_admin(cyborg):
    _, arqs = _arqs(cyborg)
    ops = [{"op": "add", "path": "/hostname", "value": "h"},
           {"op": "add", "path": "/device_rp_uuid", "value": GPU_RP},
           {"op": "add", "path": "/instance_uuid", "value": _instance()},
           {"op": "add", "path": "/project_id", "value": "p1"}]
    body = {arqs[0]["uuid"]: ops}
    assert cyborg.client.patch(ARQS, headers=NOVA, json=body
                               ).status_code == 406
    response = cyborg.client.patch(
        ARQS, headers=headers(service=True, version="2.1"), json=body)
    assert response.status_code == 403
    admin = headers(project="p1", roles="admin", service=True,
                    version="2.1")
    assert cyborg.client.patch(ARQS, headers=admin, json=body
                               ).status_code == 202


def test_unknown_rp_is_404_and_leaves_bind_failed(cyborg):
    _, arqs = _arqs(cyborg)
    instance = _instance()
    response = cyborg.bind([arqs[0]["uuid"]], str(uuid.uuid4()), instance)
    assert response.status_code == 404
    listed = _by_instance(cyborg, instance).get_json()["arqs"]
    assert [a["state"] for a in listed] == ["BindFailed"]
    # resolved: Nova's poll sees it at once
    assert _by_instance(cyborg, instance, bind_state="resolved"
                        ).status_code == 200


def test_unknown_arq_is_404(cyborg):
    response = cyborg.bind([str(uuid.uuid4())], GPU_RP, _instance())
    assert response.status_code == 404


def test_patch_is_all_or_nothing_when_handles_run_out(cyborg):
    # the GPU has one handle: a PATCH of two ARQs onto it must bind none
    _, arqs = _arqs(cyborg, amount=2, rc="PGPU")
    instance = _instance()
    response = cyborg.bind([a["uuid"] for a in arqs], GPU_RP, instance)
    assert response.status_code == 409
    assert "No free attach handle" in fault(response)
    states = [a["state"] for a in
              _by_instance(cyborg, instance).get_json()["arqs"]]
    assert states == ["BindFailed", "BindFailed"]
    # the handle was not kept by the failed PATCH
    _, other = _arqs(cyborg, rc="PGPU")
    assert cyborg.bind([other[0]["uuid"]], GPU_RP,
                       _instance()).status_code == 202


def test_identical_rebind_is_accepted_and_changes_nothing(cyborg):
    _, arqs = _arqs(cyborg)
    instance = _instance()
    assert cyborg.bind([arqs[0]["uuid"]], FPGA_REGION0_RP,
                       instance).status_code == 202
    before = _by_instance(cyborg, instance).get_json()["arqs"]
    assert cyborg.bind([arqs[0]["uuid"]], FPGA_REGION0_RP,
                       instance).status_code == 202
    assert _by_instance(cyborg, instance).get_json()["arqs"] == before


def test_bound_arq_to_a_different_target_is_409(cyborg):
    _, arqs = _arqs(cyborg)
    instance = _instance()
    cyborg.bind([arqs[0]["uuid"]], FPGA_REGION0_RP, instance)
    response = cyborg.bind([arqs[0]["uuid"]], FPGA_REGION0_RP, _instance())
    assert response.status_code == 409
    assert "Bound" in fault(response)
    arq = _by_instance(cyborg, instance).get_json()["arqs"][0]
    assert arq["state"] == "Bound"


def test_further_arq_for_bound_instance_is_400(cyborg):
    _, arqs = _arqs(cyborg, amount=2)
    instance = _instance()
    assert cyborg.bind([arqs[0]["uuid"]], FPGA_REGION0_RP,
                       instance).status_code == 202
    response = cyborg.bind([arqs[1]["uuid"]], FPGA_REGION0_RP, instance)
    assert response.status_code == 400
    assert instance in fault(response)


def test_function_mismatch_answers_409_programming_unavailable(cyborg):
    _, arqs = _arqs(cyborg, extra={"accel:function_id": "gzip"})
    instance = _instance()
    response = cyborg.bind([arqs[0]["uuid"]], FPGA_REGION0_RP, instance)
    assert response.status_code == 409
    assert "programming at bind time is not available yet" in fault(
        response)
    assert _by_instance(cyborg, instance).get_json()["arqs"][0][
        "state"] == "BindFailed"


def test_unbind_returns_to_unbound_and_frees_handle(cyborg):
    _, arqs = _arqs(cyborg, rc="PGPU")
    arq = arqs[0]["uuid"]
    assert cyborg.bind([arq], GPU_RP, _instance()).status_code == 202
    unbind = {arq: [{"op": "remove", "path": p} for p in
                    ("/hostname", "/device_rp_uuid", "/instance_uuid")]}
    assert cyborg.client.patch(ARQS, headers=NOVA,
                               json=unbind).status_code == 202
    shown = cyborg.client.get(f"{ARQS}/{arq}", headers=NOVA).get_json()
    assert shown["state"] == "Unbound"
    assert shown["hostname"] is None and shown["instance_uuid"] is None
    assert shown["device_rp_uuid"] is None
    assert shown["attach_handle_info"] == {}
    # unbinding again is harmless; the single GPU handle binds again
    assert cyborg.client.patch(ARQS, headers=NOVA,
                               json=unbind).status_code == 202
    assert cyborg.bind([arq], GPU_RP, _instance()).status_code == 202


def test_resolved_query_answers_423_while_unresolved(cyborg):
    _, arqs = _arqs(cyborg)
    instance = _instance()
    # an ARQ stuck in BindStarted (e.g. programming) for this instance
    from cyborg_lite.db import models
    with cyborg.db.transaction() as session:
        row = session.query(models.ARQ).filter_by(
            uuid=arqs[0]["uuid"]).one()
        row.state, row.instance_uuid = "BindStarted", instance
    response = _by_instance(cyborg, instance, bind_state="resolved")
    assert response.status_code == 423
    assert arqs[0]["uuid"] in fault(response)
    # Nova's own form (no bind_state) still lists it
    assert _by_instance(cyborg, instance).status_code == 200


def test_bad_bind_state_and_instance_are_400(cyborg):
    response = cyborg.client.get(f"{ARQS}?bind_state=started", headers=NOVA)
    assert response.status_code == 400
    assert "bind_state" in fault(response)
    response = cyborg.client.get(f"{ARQS}?instance=xyz", headers=NOVA)
    assert response.status_code == 400


def test_project_scoping(cyborg):
    _, arqs = _arqs(cyborg)
    arq = arqs[0]["uuid"]
    assert cyborg.client.get(f"{ARQS}/{arq}", headers=OTHER
                             ).status_code == 404
    assert cyborg.client.get(ARQS, headers=OTHER).get_json()["arqs"] == []
    assert cyborg.client.delete(f"{ARQS}?arqs={arq}", headers=OTHER
                                ).status_code == 404
    assert cyborg.client.get(f"{ARQS}/{arq}", headers=ADMIN
                             ).status_code == 200
    assert [a["uuid"] for a in cyborg.client.get(
        ARQS, headers=MEMBER).get_json()["arqs"]] == [arq]


def test_delete_by_instance_needs_service_token_and_is_idempotent(cyborg):
    _, arqs = _arqs(cyborg, rc="PGPU")
    instance = _instance()
    cyborg.bind([arqs[0]["uuid"]], GPU_RP, instance)
    url = f"{ARQS}?instance={instance}"
    assert cyborg.client.delete(url, headers=MEMBER).status_code == 403
    assert cyborg.client.delete(url, headers=NOVA).status_code == 204
    assert cyborg.client.delete(url, headers=NOVA).status_code == 204
    assert _by_instance(cyborg, instance).get_json()["arqs"] == []
    # its handle is free again
    _, again = _arqs(cyborg, rc="PGPU")
    assert cyborg.bind([again[0]["uuid"]], GPU_RP,
                       _instance()).status_code == 202


def test_delete_by_arqs_reports_missing_but_deletes_the_rest(cyborg):
    _, arqs = _arqs(cyborg, amount=2)
    missing = str(uuid.uuid4())
    response = cyborg.client.delete(
        f"{ARQS}?arqs={arqs[0]['uuid']},{missing}", headers=MEMBER)
    assert response.status_code == 404
    assert missing in fault(response)
    assert cyborg.client.get(f"{ARQS}/{arqs[0]['uuid']}", headers=MEMBER
                             ).status_code == 404
    assert cyborg.client.delete(f"{ARQS}/{arqs[1]['uuid']}", headers=MEMBER
                                ).status_code == 204


def test_deleting_bound_arq_needs_service_token(cyborg):
    _, arqs = _arqs(cyborg)
    arq = arqs[0]["uuid"]
    cyborg.bind([arq], FPGA_REGION0_RP, _instance())
    assert cyborg.client.delete(f"{ARQS}?arqs={arq}", headers=MEMBER
                                ).status_code == 403
    assert cyborg.client.get(f"{ARQS}/{arq}", headers=MEMBER
                             ).status_code == 200
    assert cyborg.client.delete(f"{ARQS}?arqs={arq}", headers=NOVA
                                ).status_code == 204


def test_delete_with_both_or_neither_parameter_is_400(cyborg):
    assert cyborg.client.delete(ARQS, headers=NOVA).status_code == 400
    response = cyborg.client.delete(
        f"{ARQS}?arqs={uuid.uuid4()}&instance={uuid.uuid4()}", headers=NOVA)
    assert response.status_code == 400


def test_limit_and_marker_page_through_arqs(cyborg):
    _, arqs = _arqs(cyborg, amount=5)
    uuids = [a["uuid"] for a in arqs]
    first = cyborg.client.get(f"{ARQS}?limit=2", headers=MEMBER).get_json()
    assert [a["uuid"] for a in first["arqs"]] == uuids[:2]
    rest = cyborg.client.get(f"{ARQS}?limit=10&marker={uuids[1]}",
                             headers=MEMBER).get_json()
    assert [a["uuid"] for a in rest["arqs"]] == uuids[2:]
    assert cyborg.client.get(f"{ARQS}?limit=0", headers=MEMBER
                             ).status_code == 400
    assert cyborg.client.get(f"{ARQS}?marker={uuid.uuid4()}",
                             headers=MEMBER).status_code == 400
