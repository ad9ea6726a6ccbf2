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

"""cyborg_lite behind a real Keystone (``auth_strategy = keystone``), on
sqlite, MariaDB and PostgreSQL: who may do what to whose accelerator
requests, with real tokens validated by keystonemiddleware, and Nova's
user-plus-service-token flows. "Another project's" must answer exactly
like "missing", and no log line may hold a token or a password."""

import json
import logging
import uuid

import pytest

from cyborg_lite import service
from cyborg_lite.api import app as app_mod
from cyborg_lite.db import engine as db_engine
from cyborg_lite.inventory import apply as inventory_apply
from tests.fixtures.cyborg import FPGA_REGION0_RP
from tests.fixtures.cyborg import FPGA_REGION1_RP
from tests.fixtures.cyborg import load_example_inventory

ARQS = "/v2/accelerator_requests"
DPS = "/v2/device_profiles"


class Api:
    """The app behind Keystone, and the headers of each caller."""

    def __init__(self, keystone, client):
        self.keystone = keystone
        self.client = client

    def as_(self, user, service_user=None):
        headers = {"X-Auth-Token": self.keystone.token(user)}
        if service_user:
            headers["X-Service-Token"] = self.keystone.token(service_user)
        return headers

    def nova(self, user):
        """What Nova sends for ``user``'s instance: the user's token and
        its own service token."""
        return self.as_(user, service_user="nova")


@pytest.fixture
def api(keystone, db_url, tmp_path, caplog):
    config = tmp_path / "cyborg_lite.conf"
    config.write_text(
        f"[DEFAULT]\nauth_strategy = keystone\nstate_path = {tmp_path}\n"
        f"[database]\nconnection = {db_url}\n"
        + keystone.authtoken_config())
    conf = service.prepare(["--config-file", str(config)],
                           setup_logging=False)
    db = db_engine.Database.from_conf(conf)
    db.sync()
    inventory_apply.apply_document(db, load_example_inventory())
    caplog.set_level(logging.DEBUG)
    app = app_mod.create_app(conf, db=db, programmer=None)
    yield Api(keystone, app.test_client())
    app.extensions["cyborg_lite"].notifier.shutdown()
    db.dispose()
    # No log line holds a token or a password (tokens of every caller the
    # test used, and every user's password).
    text = "\n".join(r.getMessage() for r in caplog.records)
    secrets = list(keystone.passwords.values()) + list(
        keystone._tokens.values())
    leaked = [s[:8] + "..." for s in secrets if s in text]
    assert not leaked, f"secrets in the log: {leaked}"
    assert "://root:" not in text or "***" in text


def _fault(response):
    body = response.get_json()
    if not body or "error_message" not in body:
        return response.get_data(as_text=True)
    return json.loads(body["error_message"]).get("faultstring")


def _profile(api, amount=1):
    name = f"dp-{uuid.uuid4().hex[:8]}"
    response = api.client.post(DPS, headers=api.as_("admin"), json=[
        {"name": name, "groups": [{"resources:FPGA": str(amount)}]}])
    assert response.status_code == 201, _fault(response)
    return name


def _bind_body(arqs, instance, rp=FPGA_REGION0_RP):
    return {arq: [{"op": "add", "path": "/hostname",
                   "value": "compute-1.example.org"},
                  {"op": "add", "path": "/device_rp_uuid", "value": rp},
                  {"op": "add", "path": "/instance_uuid", "value": instance}]
            for arq in arqs}


@pytest.fixture
def bound(api):
    """An ARQ of project-a bound (by Nova) to an instance of project-a."""
    name = _profile(api)
    response = api.client.post(ARQS, headers=api.as_("member-a"),
                               json={"device_profile_name": name})
    assert response.status_code == 201, _fault(response)
    arq = response.get_json()["arqs"][0]["uuid"]
    instance = str(uuid.uuid4())
    response = api.client.patch(ARQS, headers=api.nova("member-a"),
                                json=_bind_body([arq], instance))
    assert response.status_code == 202, _fault(response)
    return name, arq, instance


def test_no_token_and_a_forged_token_are_401(api):
    assert api.client.get(ARQS).status_code == 401
    assert api.client.get(ARQS, headers={
        "X-Auth-Token": "gAAAAAforged"}).status_code == 401
    # identity headers a client sends are not believed
    assert api.client.get(ARQS, headers={
        "X-Roles": "admin", "X-Project-Id": "x"}).status_code == 401


def _same(api, method, template, theirs, missing, headers, json_body=None):
    answers = []
    for ident in (theirs, missing):
        response = getattr(api.client, method)(
            template.format(ident), headers=headers,
            json=json_body(ident) if json_body else None)
        answers.append((response.status_code,
                        (_fault(response) or "").replace(ident, "X")))
    assert answers[0] == answers[1], answers
    return answers[0][0]


@pytest.mark.parametrize("caller", ["member-b", "reader-b"])
def test_another_projects_arq_is_like_a_missing_one(api, bound, caller):
    _, arq, instance = bound
    missing = str(uuid.uuid4())
    headers = api.as_(caller)
    assert _same(api, "get", ARQS + "/{}", arq, missing, headers) == 404
    assert _same(api, "get", ARQS + "?marker={}", arq, missing,
                 headers) == 400
    assert _same(api, "get", ARQS + "?instance={}", instance, missing,
                 headers) == 200
    assert api.client.get(ARQS, headers=headers).get_json() == {"arqs": []}
    nova = api.nova(caller)
    for template in (ARQS + "/{}", ARQS + "?arqs={}"):
        status = _same(api, "delete", template, arq, missing, nova)
        assert status in (403, 404)
    assert _same(api, "delete", ARQS + "?instance={}", instance, missing,
                 nova) in (204, 403)
    # bind and unbind of another project's ARQ: as for a missing one
    assert _same(api, "patch", ARQS, arq, missing, nova,
                 json_body=lambda u: _bind_body(
                     [u], str(uuid.uuid4()), FPGA_REGION1_RP)) in (403, 404)
    assert _same(api, "patch", ARQS, arq, missing, nova,
                 json_body=lambda u: {u: [{"op": "remove",
                                           "path": "/hostname"}]}) in (
        403, 404)
    # and it is untouched
    shown = api.client.get(f"{ARQS}/{arq}", headers=api.as_("member-a"))
    assert shown.get_json()["state"] == "Bound"
    assert shown.get_json()["instance_uuid"] == instance


def test_owners_readers_and_admins_see_it(api, bound):
    _, arq, instance = bound
    for caller in ("member-a", "reader-a", "admin"):
        response = api.client.get(f"{ARQS}/{arq}", headers=api.as_(caller))
        assert response.status_code == 200, caller
        listed = api.client.get(f"{ARQS}?instance={instance}",
                                headers=api.as_(caller)).get_json()["arqs"]
        assert [a["uuid"] for a in listed] == [arq], caller


def test_readers_cannot_change_anything(api, bound):
    name, arq, instance = bound
    reader = api.as_("reader-a")
    assert api.client.post(ARQS, headers=reader, json={
        "device_profile_name": name}).status_code == 403
    assert api.client.delete(f"{ARQS}/{arq}",
                             headers=reader).status_code == 403
    assert api.client.post(DPS, headers=reader, json=[
        {"name": "x", "groups": [{"resources:FPGA": "1"}]}]
    ).status_code == 403


def test_binding_needs_novas_service_token(api):
    name = _profile(api)
    arq = api.client.post(ARQS, headers=api.as_("member-a"), json={
        "device_profile_name": name}).get_json()["arqs"][0]["uuid"]
    instance = str(uuid.uuid4())
    body = _bind_body([arq], instance)
    # the user alone, or a user "service token" that is not a service's
    for headers in (api.as_("member-a"),
                    api.as_("member-a", service_user="member-b")):
        response = api.client.patch(ARQS, headers=headers, json=body)
        assert response.status_code in (401, 403), response.status_code
    response = api.client.patch(ARQS, headers=api.nova("member-a"),
                                json=body)
    assert response.status_code == 202
    # Nova's teardown: delete by instance, with the service token
    assert api.client.delete(f"{ARQS}?instance={instance}",
                             headers=api.as_("member-a")).status_code == 403
    assert api.client.delete(f"{ARQS}?instance={instance}",
                             headers=api.nova("member-a")).status_code == 204
    assert api.client.get(f"{ARQS}/{arq}",
                          headers=api.as_("member-a")).status_code == 404


def test_bind_onto_another_projects_instance_names_nothing_of_theirs(
        api, bound):
    _, theirs, instance = bound
    name = _profile(api)
    mine = api.client.post(ARQS, headers=api.as_("member-b"), json={
        "device_profile_name": name}).get_json()["arqs"][0]["uuid"]
    response = api.client.patch(ARQS, headers=api.nova("member-b"),
                                json=_bind_body([mine], instance,
                                                FPGA_REGION1_RP))
    assert response.status_code == 400
    assert theirs not in _fault(response)
