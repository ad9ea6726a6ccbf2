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

"""The plugin reaches cyborg_lite as Nova does: cyborg_lite behind a real
Keystone (``auth_strategy = keystone``), the plugin's ``[cyborg]`` a
keystoneauth password login, its token sent as the service token too."""

import secrets
import uuid

import openstack
import pytest

from tests.fixtures import keystone as keystone_fixture
from tests.functional.cyborg_lite_dra import env

REGION0 = "fpga-0000-0f-00-0-r0"


def _user(keystone, roles):
    """A new user of project ``service`` with ``roles``; (name,
    password)."""
    conn = openstack.connect(
        auth_url=keystone.url, username="admin",
        password=keystone.passwords["admin"], project_name="admin",
        user_domain_name=keystone_fixture.DOMAIN,
        project_domain_name=keystone_fixture.DOMAIN)
    try:
        name = f"dra-{uuid.uuid4().hex[:8]}"
        password = secrets.token_urlsafe(12)
        domain = conn.identity.find_domain(keystone_fixture.DOMAIN)
        user = conn.identity.create_user(name=name, password=password,
                                         domain_id=domain.id)
        project = conn.identity.find_project("service", domain_id=domain.id)
        for role in roles:
            conn.identity.assign_project_role_to_user(
                project, user, conn.identity.find_role(role))
        return name, password
    finally:
        conn.close()


@pytest.fixture
def guarded(tmp_path, keystone):
    """cyborg_lite behind Keystone, and its admin's headers."""
    server = env.CyborgLite(tmp_path / "cyborg", keystone=keystone)
    yield server, {"X-Auth-Token": keystone.token("admin")}
    server.close()


def _plugin(tmp_path, server, keystone, kube_apiserver, name, password):
    return env.Plugin(tmp_path / f"plugin-{name}", server, kube_apiserver, **{
        "cyborg.auth_type": "password", "cyborg.auth_url": keystone.url,
        "cyborg.username": name, "cyborg.password": password,
        "cyborg.project_name": "service",
        "cyborg.user_domain_name": keystone_fixture.DOMAIN,
        "cyborg.project_domain_name": keystone_fixture.DOMAIN})


def test_a_service_user_prepares_and_unprepares_through_keystone(
        tmp_path, keystone, guarded, kube_apiserver):
    server, admin = guarded
    name, password = _user(keystone, ["service", "manager"])
    plugin = _plugin(tmp_path, server, keystone, kube_apiserver, name,
                     password)
    try:
        plugin.start()
        claim = env.allocate(kube_apiserver, plugin, REGION0,
                             server.profile("nlb3", headers=admin))
        uid = claim[1]

        error, devices = plugin.prepare([claim])[uid]

        assert error == "", plugin.log()
        assert devices[0][2] == REGION0
        status, body = server.call(
            "GET", f"/v2/accelerator_requests?instance={uid}", admin)
        (arq,) = body["arqs"]
        assert arq["state"] == "Bound"
        assert server.region(0)["function_id"] == "nlb3"
        # The slices were read with the same credentials.
        assert any(s["spec"]["nodeName"] == plugin.node
                   for s in kube_apiserver.slices.values())

        assert plugin.unprepare([claim]) == {uid: ""}
        status, body = server.call(
            "GET", f"/v2/accelerator_requests?instance={uid}", admin)
        assert body["arqs"] == []
    finally:
        plugin.close()


def test_a_user_without_the_service_role_is_refused_and_says_so(
        tmp_path, keystone, guarded, kube_apiserver):
    server, admin = guarded
    name, password = _user(keystone, ["manager"])
    plugin = _plugin(tmp_path, server, keystone, kube_apiserver, name,
                     password)
    try:
        plugin.start()
        claim = env.allocate(kube_apiserver, plugin, REGION0,
                             server.profile("nlb3", headers=admin))

        error, devices = plugin.prepare([claim])[claim[1]]

        # keystonemiddleware (service_token_roles_required) refuses a
        # service token without the service role, whatever the call.
        assert "cyborg_lite listing devices failed (401)" in error, error
        assert devices == []
        status, body = server.call("GET", "/v2/accelerator_requests",
                                          admin)
        assert body["arqs"] == []
    finally:
        plugin.close()
