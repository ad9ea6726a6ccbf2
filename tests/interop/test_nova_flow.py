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

"""The calls Nova makes, in Nova's order and exact form, against cyborg_lite.

:class:`NovaCyborgClient` sends what ``nova/accelerator/cyborg.py``
(``_CyborgClient``) sends, through a keystoneauth adapter of service type
``accelerator`` on the catalog endpoint, with no microversion header and with
the service-token role that ``[service_user] send_service_user_token`` adds.
The Nova stand-in receives cyborg_lite's ``os-server-external-events``.
"""

import time
import uuid

from keystoneauth1 import adapter
from keystoneauth1 import session as ks_session
import pytest
import requests

RESOLVED = ("Bound", "BindFailed", "Deleting")


class NovaCyborgClient:
    """Nova's Cyborg client, call for call (nova/accelerator/cyborg.py)."""

    DEVICE_PROFILE_URL = "/device_profiles"
    ARQ_URL = "/accelerator_requests"

    def __init__(self, endpoint, project_id):
        # NOTE(interop): behind noauth these headers stand for Nova's user
        # token (project, roles) plus its service token (service role).
        headers = {"X-Project-Id": project_id, "X-User-Id": uuid.uuid4().hex,
                   "X-Roles": "member,reader", "X-Service-Roles": "service"}
        self._client = adapter.Adapter(
            session=ks_session.Session(), service_type="accelerator",
            endpoint_override=endpoint, additional_headers=headers)

    def get_device_profile_groups(self, dp_name):
        resp = self._client.get(self.DEVICE_PROFILE_URL,
                                params={"name": dp_name})
        profiles = resp.json().get("device_profiles")
        assert len(profiles) == 1, profiles
        return profiles[0]["groups"]

    def create_arqs(self, dp_name):
        resp = self._client.post(self.ARQ_URL,
                                 json={"device_profile_name": dp_name})
        return resp.json().get("arqs")

    def bind_arqs(self, bindings):
        patch_list = {}
        for arq_uuid, binding in bindings.items():
            patch_list[arq_uuid] = [
                {"path": "/" + field, "op": "add", "value": value}
                for field, value in binding.items()]
        return self._client.patch(self.ARQ_URL, json=patch_list,
                                  raise_exc=False)

    def wait_resolved(self, instance_uuid, timeout=30.0):
        """Poll ``?instance=&bind_state=resolved`` until it is not 423."""
        deadline = time.monotonic() + timeout
        while True:
            resp = self._client.get(
                self.ARQ_URL, raise_exc=False,
                params={"instance": instance_uuid, "bind_state": "resolved"})
            if resp.status_code != 423 or time.monotonic() > deadline:
                return resp
            time.sleep(0.05)

    def get_arqs_for_instance(self, instance_uuid, only_resolved=False):
        resp = self._client.get(self.ARQ_URL,
                                params={"instance": instance_uuid})
        arqs = resp.json().get("arqs")
        if only_resolved:
            arqs = [arq for arq in arqs if arq["state"] in RESOLVED]
        return arqs

    def delete_arqs_for_instance(self, instance_uuid):
        return self._client.delete(self.ARQ_URL,
                                   params={"instance": instance_uuid})

    def delete_arqs_by_uuid(self, arq_uuids):
        return self._client.delete(self.ARQ_URL, raise_exc=False,
                                   params={"arqs": ",".join(arq_uuids)})


def _create_profile(server, groups):
    """An operator creates the device profile (noauth default: admin)."""
    name = f"dp-{uuid.uuid4().hex[:10]}"
    resp = requests.post(f"{server.url}/v2/device_profiles", timeout=30,
                         json=[{"name": name, "groups": groups}])
    assert resp.status_code == 201, resp.text
    return name


def _bdf(info):
    return "{:04x}:{:02x}:{:02x}.{:x}".format(
        *(int(str(info[key]), 16)
          for key in ("domain", "bus", "device", "function")))


def _addresses(region):
    return {h["pci_address"] for h in region["attach_handles"]}


@pytest.mark.parametrize("mount", ["/accelerator/v2", "/v2"])
def test_nova_boot_flow_binds_notifies_and_cleans_up(
        server, nova, fresh_inventory, mount):
    document = fresh_inventory(2, 1)
    region0, region1 = document["devices"][0]["regions"]
    dp_name = _create_profile(server, [
        {"resources:FPGA": "2", "trait:CUSTOM_FPGA_INTEL": "required"},
        {"resources:FPGA": "1"}])
    client = NovaCyborgClient(server.url + mount, uuid.uuid4().hex)
    instance = str(uuid.uuid4())

    # API/scheduler: the groups, unchanged, become request groups.
    groups = client.get_device_profile_groups(dp_name)
    assert groups == [
        {"resources:FPGA": "2", "trait:CUSTOM_FPGA_INTEL": "required"},
        {"resources:FPGA": "1"}]

    # Conductor: ARQs per group, matched to the scheduler's RPs by group id.
    arqs = client.create_arqs(dp_name)
    assert sorted(a["device_profile_group_id"] for a in arqs) == [0, 0, 1]
    assert {a["state"] for a in arqs} == {"Initial"}
    rg_rp_map = {"device_profile_0": [region0["rp_uuid"]],
                 "device_profile_1": [region1["rp_uuid"]]}
    bindings = {
        arq["uuid"]: {
            "hostname": document["host"],
            "device_rp_uuid": rg_rp_map[
                f"device_profile_{arq['device_profile_group_id']}"][0],
            "instance_uuid": instance}
        for arq in arqs}
    resp = client.bind_arqs(bindings)
    assert resp.status_code == 202, resp.text
    assert resp.content in (b"", b"null"), resp.content

    # Compute: wait until resolved, then read accel_info.
    resp = client.wait_resolved(instance)
    assert resp.status_code == 200, resp.text
    assert {a["state"] for a in resp.json()["arqs"]} == {"Bound"}

    nova.wait_for_events(3, server_uuid=instance)
    nova.settle()
    events = nova.events_for(instance)
    assert sorted(e["tag"] for e in events) == sorted(bindings), events
    for event in events:
        assert event["name"] == "accelerator-request-bound"
        assert event["status"] == "completed"
        assert event.microversion == "2.82"
        assert event.path == "/v2.1/os-server-external-events"

    accel_info = client.get_arqs_for_instance(instance, only_resolved=True)
    assert len(accel_info) == 3
    by_group = {0: [], 1: []}
    for arq in accel_info:
        assert arq["state"] == "Bound"
        assert arq["hostname"] == document["host"]
        assert arq["instance_uuid"] == instance
        assert arq["attach_handle_type"] == "PCI"
        info = arq["attach_handle_info"]
        assert all(isinstance(info[k], str)
                   for k in ("domain", "bus", "device", "function")), info
        by_group[arq["device_profile_group_id"]].append(_bdf(info))
    assert len(set(by_group[0])) == 2 and set(by_group[0]) <= _addresses(
        region0)
    assert set(by_group[1]) == _addresses(region1)

    # Teardown: delete by instance, twice (Nova retries on cleanup paths).
    assert client.delete_arqs_for_instance(instance).status_code == 204
    assert client.delete_arqs_for_instance(instance).status_code == 204
    assert client.get_arqs_for_instance(instance) == []

    # The handles are free again: a new instance binds the 1-handle region.
    again = client.create_arqs(dp_name)
    other = str(uuid.uuid4())
    resp = client.bind_arqs({
        arq["uuid"]: {"hostname": document["host"],
                      "device_rp_uuid": rg_rp_map[
                          f"device_profile_{arq['device_profile_group_id']}"
                      ][0],
                      "instance_uuid": other}
        for arq in again})
    assert resp.status_code == 202, resp.text
    client.delete_arqs_for_instance(other)


def test_bind_without_free_handle_fails_without_completed_event(
        server, nova, fresh_inventory):
    document = fresh_inventory(1)
    (region,) = document["devices"][0]["regions"]
    dp_name = _create_profile(server, [{"resources:FPGA": "1"}])
    client = NovaCyborgClient(server.url + "/accelerator/v2",
                              uuid.uuid4().hex)

    first, second = str(uuid.uuid4()), str(uuid.uuid4())
    (arq1,) = client.create_arqs(dp_name)
    (arq2,) = client.create_arqs(dp_name)
    target = {"hostname": document["host"],
              "device_rp_uuid": region["rp_uuid"]}
    resp = client.bind_arqs({arq1["uuid"]: dict(target, instance_uuid=first)})
    assert resp.status_code == 202, resp.text

    # The only handle is taken: Nova's bind of a second instance fails.
    resp = client.bind_arqs({arq2["uuid"]: dict(target, instance_uuid=second)})
    assert resp.status_code == 409, resp.text
    assert "error_message" in resp.json()

    resp = client.wait_resolved(second)
    assert resp.status_code == 200, resp.text
    assert [a["state"] for a in resp.json()["arqs"]] == ["BindFailed"]
    nova.wait_for_events(1, server_uuid=first)
    nova.settle()
    assert [e["status"] for e in nova.events_for(first)] == ["completed"]
    assert not [e for e in nova.events_for(second)
                if e["status"] == "completed"], nova.events_for(second)

    # Nova's cleanup after AcceleratorRequestBindingFailed.
    assert client.delete_arqs_by_uuid([arq2["uuid"]]).status_code == 204
    client.delete_arqs_for_instance(first)


def test_failed_multi_arq_bind_leaves_nothing_bound(
        server, nova, fresh_inventory):
    # Group 0 fits (1 handle for 1 ARQ); group 1 asks 2 of a 1-handle region.
    document = fresh_inventory(1, 1)
    region0, region1 = document["devices"][0]["regions"]
    dp_name = _create_profile(server, [{"resources:FPGA": "1"},
                                       {"resources:FPGA": "2"}])
    client = NovaCyborgClient(server.url + "/accelerator/v2",
                              uuid.uuid4().hex)
    instance = str(uuid.uuid4())
    arqs = client.create_arqs(dp_name)
    rps = {0: region0["rp_uuid"], 1: region1["rp_uuid"]}

    resp = client.bind_arqs({
        arq["uuid"]: {"hostname": document["host"],
                      "device_rp_uuid": rps[arq["device_profile_group_id"]],
                      "instance_uuid": instance}
        for arq in arqs})
    assert resp.status_code == 409, resp.text
    states = [a["state"] for a in client.get_arqs_for_instance(instance)]
    assert sorted(states) == ["BindFailed"] * 3, states
    nova.settle(quiet=0.3)
    assert nova.events_for(instance) == []

    # Nova deletes the ARQs and reschedules; the handles are all free.
    assert client.delete_arqs_by_uuid(
        [a["uuid"] for a in arqs]).status_code == 204
    (arq,) = [a for a in client.create_arqs(dp_name)
              if a["device_profile_group_id"] == 0]
    other = str(uuid.uuid4())
    resp = client.bind_arqs({arq["uuid"]: {
        "hostname": document["host"], "device_rp_uuid": region0["rp_uuid"],
        "instance_uuid": other}})
    assert resp.status_code == 202, resp.text
    client.delete_arqs_for_instance(other)


def test_bind_to_unknown_resource_provider_is_404_and_bind_failed(
        server, nova, fresh_inventory):
    document = fresh_inventory(1)
    dp_name = _create_profile(server, [{"resources:FPGA": "1"}])
    client = NovaCyborgClient(server.url + "/accelerator/v2",
                              uuid.uuid4().hex)
    instance = str(uuid.uuid4())
    (arq,) = client.create_arqs(dp_name)

    resp = client.bind_arqs({arq["uuid"]: {
        "hostname": document["host"], "device_rp_uuid": str(uuid.uuid4()),
        "instance_uuid": instance}})
    assert resp.status_code == 404, resp.text
    assert [a["state"] for a in client.get_arqs_for_instance(instance)] == [
        "BindFailed"]
    nova.settle(quiet=0.3)
    assert nova.events_for(instance) == []
    client.delete_arqs_for_instance(instance)


def test_nova_answering_207_422_is_not_retried(server, nova, fresh_inventory):
    document = fresh_inventory(1)
    (region,) = document["devices"][0]["regions"]
    dp_name = _create_profile(server, [{"resources:FPGA": "1"}])
    client = NovaCyborgClient(server.url + "/accelerator/v2",
                              uuid.uuid4().hex)
    instance = str(uuid.uuid4())
    (arq,) = client.create_arqs(dp_name)

    nova.answer_207(422, server_uuid=instance)  # no host yet
    resp = client.bind_arqs({arq["uuid"]: {
        "hostname": document["host"], "device_rp_uuid": region["rp_uuid"],
        "instance_uuid": instance}})
    assert resp.status_code == 202, resp.text
    nova.wait_for_events(1, server_uuid=instance)
    nova.settle()
    events = nova.events_for(instance)
    assert [(e["tag"], e["status"], e.code) for e in events] == [
        (arq["uuid"], "completed", 422)]
    # Nova's compute manager then sees the early Bound state by polling.
    assert [a["state"] for a in client.get_arqs_for_instance(
        instance, only_resolved=True)] == ["Bound"]
    client.delete_arqs_for_instance(instance)


def test_nova_errors_are_retried_until_the_event_lands(
        server, nova, fresh_inventory):
    document = fresh_inventory(1)
    (region,) = document["devices"][0]["regions"]
    dp_name = _create_profile(server, [{"resources:FPGA": "1"}])
    client = NovaCyborgClient(server.url + "/accelerator/v2",
                              uuid.uuid4().hex)
    instance = str(uuid.uuid4())
    (arq,) = client.create_arqs(dp_name)

    nova.fail_next(2, status=500, server_uuid=instance)
    resp = client.bind_arqs({arq["uuid"]: {
        "hostname": document["host"], "device_rp_uuid": region["rp_uuid"],
        "instance_uuid": instance}})
    assert resp.status_code == 202, resp.text

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if any(e.code == 200 for e in nova.events_for(instance)):
            break
        time.sleep(0.05)
    nova.settle()
    events = nova.events_for(instance)
    assert [e.code for e in events] == [500, 500, 200], events
    assert {(e["tag"], e["status"]) for e in events} == {
        (arq["uuid"], "completed")}
    client.delete_arqs_for_instance(instance)
