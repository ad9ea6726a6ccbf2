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

"""openstacksdk's accelerator proxy, unchanged, against cyborg_lite.

The connection is given only the server's address (``auth_type=none``), so
keystoneauth's version discovery runs against cyborg_lite's own ``/`` and
``/v2`` documents, at the root and under the ``/accelerator`` mount.
"""

import uuid

import openstack
from openstack import exceptions as sdk_exc
import pytest

from tests.fixtures.cyborg_server import CyborgServer

MOUNTS = ["", "/accelerator", "/accelerator/v2"]


def _connect(url):
    return openstack.connect(auth_type="none", auth={"endpoint": url},
                             load_yaml_config=False, load_envvars=False)


@pytest.mark.parametrize("mount", MOUNTS)
def test_discovery_lands_on_a_working_v2_endpoint(server, mount):
    conn = _connect(server.url + mount)
    endpoint = conn.accelerator.get_endpoint()
    expected = server.url + ("/v2" if mount == "" else "/accelerator/v2")
    assert endpoint.rstrip("/") == expected
    # And that endpoint serves the API: the example inventory's regions
    # (the SDK's Deployable has no rp_uuid attribute; names carry the host).
    names = {d.name for d in conn.accelerator.deployables()}
    assert "compute-1.example.org_0000:5e:00.0_0" in names, names


@pytest.mark.parametrize("mount", ["", "/accelerator"])
def test_device_profile_and_arq_life_cycle(server, fresh_inventory, mount):
    document = fresh_inventory(2)
    (region,) = document["devices"][0]["regions"]
    conn = _connect(server.url + mount)
    acc = conn.accelerator
    name = f"sdk-{uuid.uuid4().hex[:10]}"
    groups = [{"resources:FPGA": "1", "trait:CUSTOM_FPGA_INTEL": "required"}]

    profile = acc.create_device_profile(name=name, groups=groups,
                                        description="made by openstacksdk")
    assert profile.name == name
    assert profile.groups == groups
    assert profile.description == "made by openstacksdk"
    assert name in [p.name for p in acc.device_profiles()]
    fetched = acc.get_device_profile(profile.id)
    assert (fetched.name, fetched.groups) == (name, groups)
    # What ``openstack accelerator device profile show NAME`` calls, with
    # no microversion.
    by_name = acc.get_device_profile(name)
    assert (by_name.uuid, by_name.groups) == (profile.uuid, groups)

    arq = acc.create_accelerator_request(device_profile_name=name)
    assert arq.state == "Initial"
    assert arq.device_profile_name == name
    assert arq.device_profile_group_id == 0
    assert arq.id in [a.id for a in acc.accelerator_requests()]

    # Bind: the SDK sends PATCH /v2/accelerator_requests/{uuid}.
    instance = str(uuid.uuid4())
    acc.patch_accelerator_request(arq.id, [
        {"op": "add", "path": "/hostname", "value": document["host"]},
        {"op": "add", "path": "/device_rp_uuid", "value": region["rp_uuid"]},
        {"op": "add", "path": "/instance_uuid", "value": instance}])
    bound = acc.get_accelerator_request(arq.id)
    assert bound.state == "Bound"
    assert (bound.hostname, bound.device_rp_uuid, bound.instance_uuid) == (
        document["host"], region["rp_uuid"], instance)
    assert bound.attach_handle_type == "PCI"
    assert set(bound.attach_handle_info) >= {"domain", "bus", "device",
                                             "function"}

    acc.patch_accelerator_request(arq.id, [
        {"op": "remove", "path": "/hostname"},
        {"op": "remove", "path": "/device_rp_uuid"},
        {"op": "remove", "path": "/instance_uuid"}])
    unbound = acc.get_accelerator_request(arq.id)
    assert unbound.state == "Unbound"
    assert (unbound.hostname, unbound.device_rp_uuid,
            unbound.instance_uuid) == (None, None, None)
    assert unbound.attach_handle_info == {}

    acc.delete_accelerator_request(arq.id, ignore_missing=False)
    with pytest.raises(sdk_exc.NotFoundException):
        acc.get_accelerator_request(arq.id)

    acc.delete_device_profile(profile.id, ignore_missing=False)
    with pytest.raises(sdk_exc.NotFoundException):
        acc.get_device_profile(profile.id)


def test_errors_reach_the_sdk_as_readable_messages(server):
    acc = _connect(server.url).accelerator
    missing = f"no-such-profile-{uuid.uuid4().hex[:6]}"
    with pytest.raises(sdk_exc.NotFoundException) as exc:
        acc.create_accelerator_request(device_profile_name=missing)
    # openstacksdk decodes Cyborg's double-encoded error_message.
    assert missing in exc.value.details

    with pytest.raises(sdk_exc.BadRequestException) as exc:
        acc.create_device_profile(name="bad name!", groups=[
            {"resources:FPGA": "1"}])
    assert exc.value.details and "name" in exc.value.details


def test_devices_and_deployables_are_listed(server, fresh_inventory):
    document = fresh_inventory(3)
    (region,) = document["devices"][0]["regions"]
    acc = _connect(server.url + "/accelerator").accelerator

    (deployable,) = [d for d in acc.deployables()
                     if d.name.startswith(document["host"] + "_")]
    assert deployable.num_accelerators == 3
    fetched = acc.get_deployable(deployable.id)
    assert (fetched.name, fetched.num_accelerators) == (deployable.name, 3)
    devices = [d for d in acc.devices() if d.hostname == document["host"]]
    assert [d.type for d in devices] == ["FPGA"]


def test_lists_longer_than_a_page_arrive_whole(tmp_path):
    """With pages of 4 (``[api] max_limit``), openstacksdk, asking for no
    limit, follows the next links and sees all 10 ARQs, never a silent
    first page."""
    small_pages = CyborgServer(tmp_path, workers=1,
                               options={"api": {"max_limit": "4"}})
    with small_pages:
        acc = _connect(small_pages.url).accelerator
        name = f"sdk-{uuid.uuid4().hex[:10]}"
        acc.create_device_profile(name=name,
                                  groups=[{"resources:FPGA": "1"}])
        created = {
            acc.create_accelerator_request(device_profile_name=name).uuid
            for _ in range(10)}
        listed = [a.uuid for a in acc.accelerator_requests()]
    assert sorted(listed) == sorted(created)
