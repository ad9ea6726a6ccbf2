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

"""``GET /healthcheck`` as load balancers and monitoring use it."""

import pytest

from cyborg_lite.api import app as app_mod
from cyborg_lite.db import engine as db_engine
from cyborg_lite.db import leases as lease_db
from cyborg_lite.db import migration
from cyborg_lite.inventory import lease as inventory_lease
from tests.fixtures.cyborg import ADMIN
from tests.fixtures.cyborg import make_conf
from tests.fixtures.cyborg import MEMBER

JSON = {"Accept": "application/json"}


@pytest.fixture
def make_app(tmp_path):
    made = []

    def make(url=None, **overrides):
        url = url or f"sqlite:///{tmp_path}/health.sqlite"
        conf = make_conf(tmp_path, **{"database.connection": url},
                         **overrides)
        db = db_engine.Database(url)
        app = app_mod.create_app(conf, db=db, programmer=None)
        made.append(db)
        return app.test_client(), db

    yield make
    for db in made:
        db.dispose()


def test_503_until_the_schema_is_current_then_200(make_app):
    client, db = make_app()
    response = client.get("/healthcheck")
    assert response.status_code == 503
    assert "cyborg-lite-manage db sync" in response.get_data(as_text=True)
    db.sync()
    response = client.get("/healthcheck")
    assert response.status_code == 200
    assert response.get_data(as_text=True) == "OK"
    assert client.head("/healthcheck").status_code == 204


def test_database_down_is_503_naming_it(make_app):
    client, _ = make_app("mysql+pymysql://root@127.0.0.1:1/nothing")
    response = client.get("/healthcheck", headers={**ADMIN, **JSON})
    assert response.status_code == 503
    body = response.get_json()
    assert body["reasons"][0]["reason"].startswith("database unreachable")


def test_details_only_for_administrators(make_app):
    client, db = make_app()
    db.sync()
    lease_db.acquire(db, inventory_lease.LEASE_NAME, "worker-1", 60)
    lease_db.record_outcome(db, inventory_lease.LEASE_NAME,
                            "ok: 3 document(s) applied, 0 node(s) skipped")

    body = client.get("/healthcheck", headers={**MEMBER, **JSON}).get_json()
    assert body == {"detailed": False, "reasons": ["OK"]}

    body = client.get("/healthcheck", headers={**ADMIN, **JSON}).get_json()
    assert body["detailed"] is True
    details = body["reasons"][0]["details"].splitlines()
    assert details[0] == f"database: sqlite:///{db.engine.url.database}"
    assert details[1] == (f"schema revision: {migration.head()} (this code "
                          f"needs {migration.head()})")
    assert details[2] == ("agent transport: in-process (agents embedded in "
                          "the API process)")
    assert details[3].startswith("last inventory sync: ended ")
    assert details[3].endswith(", ok: 3 document(s) applied, 0 node(s) "
                               "skipped")


def test_broker_reachability_is_in_the_details(make_app):
    client, db = make_app(
        transport_url="rabbit://guest:guest@127.0.0.1:5672/")
    db.sync()
    body = client.get("/healthcheck", headers={**ADMIN, **JSON}).get_json()
    assert "agent transport: broker reachable" in (
        body["reasons"][0]["details"])

    client, db = make_app(
        url=f"sqlite:///{db.engine.url.database}2",
        transport_url="rabbit://guest:guest@127.0.0.1:1/")
    db.sync()
    response = client.get("/healthcheck", headers={**ADMIN, **JSON})
    # The broker is a detail: the API itself still serves.
    assert response.status_code == 200
    assert "agent transport: broker unreachable" in (
        response.get_json()["reasons"][0]["details"])


def test_keystone_deployments_answer_load_balancers_without_a_token(
        make_app):
    client, db = make_app(auth_strategy="keystone", **{
        "keystone_authtoken.www_authenticate_uri":
            "http://keystone.example.org/identity"})
    db.sync()
    response = client.get("/healthcheck", headers=JSON)
    assert response.status_code == 200
    assert response.get_json() == {"detailed": False, "reasons": ["OK"]}
    # Everything else still needs a token.
    assert client.get("/v2/device_profiles").status_code == 401
