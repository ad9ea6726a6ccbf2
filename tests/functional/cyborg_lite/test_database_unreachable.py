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

"""A lost database: 503 with Retry-After in the API's envelope, one log
line per request, and service again once the database is back; a create
whose answer was lost after its INSERT committed says so, and its ARQs are
reaped once Nova created others.

The database is a real MariaDB or PostgreSQL behind a loopback TCP proxy
(:mod:`tests.fixtures.tcp_proxy`) that the test cuts and restores: the
connections in the pool are reset under the API, new ones refused.
"""

import datetime
import json
import logging
import time
import uuid

import pytest
import sqlalchemy as sa

from cyborg_lite import periodics as periodics_mod
from cyborg_lite import reclaim
from cyborg_lite.api import app as app_mod
from cyborg_lite.db import backends as db_backends
from cyborg_lite.db import engine as db_engine
from cyborg_lite.db import leases as lease_db
from cyborg_lite.db import models
from tests.fixtures import cyborg as cyborg_fixture
from tests.fixtures import databases
from tests.fixtures import tcp_proxy

SERVERS = [pytest.param("mariadb", marks=pytest.mark.mariadb),
           pytest.param("postgresql", marks=pytest.mark.postgresql)]


@pytest.fixture(params=SERVERS)
def cut_able(request, tmp_path):
    """A cyborg_lite whose database connections pass through a proxy;
    yields ``(cyborg, proxy)``."""
    with databases.database(request.param, tmp_path) as url:
        with tcp_proxy.proxied(url) as (proxy, proxied_url):
            instance = cyborg_fixture.make_cyborg(tmp_path,
                                                  db_url=proxied_url)
            yield instance, proxy
            instance.app.extensions["cyborg_lite"].notifier.shutdown()
            instance.db.dispose()


def _fault(response):
    return json.loads(response.get_json()["error_message"])


def test_lost_database_is_503_then_serves_again(cut_able, caplog):
    cyborg, proxy = cut_able
    profile = cyborg.create_profile([{"resources:FPGA": "1"}])
    arqs = cyborg.create_arqs(profile["name"])
    client = cyborg.client

    proxy.cut()
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        answers = [
            client.get("/v2/device_profiles", headers=cyborg_fixture.MEMBER),
            client.get(f"/v2/accelerator_requests/{arqs[0]['uuid']}",
                       headers=cyborg_fixture.NOVA),
            client.post("/v2/accelerator_requests",
                        headers=cyborg_fixture.NOVA,
                        json={"device_profile_name": profile["name"]}),
            client.delete(f"/v2/device_profiles/{profile['uuid']}",
                          headers=cyborg_fixture.ADMIN),
        ]
    for response in answers:
        assert response.status_code == 503, response.get_data(as_text=True)
        assert response.headers["Retry-After"] == "5"
        fault = _fault(response)
        assert fault["faultcode"] == "Server"
        assert fault["faultstring"].startswith(
            "The database is unavailable (cannot connect to it). ")
    # A read changed nothing; a write may have been made (see below).
    for response in answers[:2]:
        assert "Retry in a few seconds." in _fault(response)["faultstring"]
    for response in answers[2:]:
        assert "may have been carried out" in _fault(response)["faultstring"]
    records = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(records) == len(answers), [r.getMessage() for r in records]
    assert not any(r.exc_info for r in records)
    assert "The database is unavailable" in records[0].getMessage()

    proxy.restore()
    response = client.get(f"/v2/accelerator_requests/{arqs[0]['uuid']}",
                          headers=cyborg_fixture.NOVA)
    assert response.status_code == 200, response.get_data(as_text=True)
    response = client.post("/v2/accelerator_requests",
                           headers=cyborg_fixture.NOVA,
                           json={"device_profile_name": profile["name"]})
    assert response.status_code == 201, response.get_data(as_text=True)
    listed = client.get("/v2/accelerator_requests",
                        headers=cyborg_fixture.NOVA).get_json()
    # Nothing the 503s answered was written.
    assert len(listed["arqs"]) == 2


def test_a_create_whose_answer_was_lost_leaves_no_arq_behind(cut_able,
                                                             caplog):
    cyborg, proxy = cut_able
    cyborg.conf.set_override("initial_arq_max_age", 3600, group="nova")
    profile = cyborg.create_profile([{"resources:FPGA": "1"}])
    client = cyborg.client
    proxy.lose_answer_after(b"INSERT INTO arqs")

    response = client.post("/v2/accelerator_requests",
                           headers=cyborg_fixture.NOVA,
                           json={"device_profile_name": profile["name"]})

    # The INSERT was committed; the answer says it may have been.
    assert response.status_code == 503, response.get_data(as_text=True)
    assert response.headers["Retry-After"] == "5"
    assert "may have been carried out" in _fault(response)["faultstring"]
    (lost,) = _arq_rows(cyborg)
    assert (lost.state, lost.instance_uuid, lost.created_by_service) == (
        "Initial", None, True)
    # Nova retries, gets other ARQs and binds them.
    retried = cyborg.create_arqs(profile["name"])[0]["uuid"]
    instance = str(uuid.uuid4())
    assert cyborg.bind([retried], cyborg_fixture.FPGA_REGION0_RP,
                       instance).status_code == 202
    reclaimer = reclaim.Reclaimer(cyborg.conf, cyborg.db)
    assert reclaimer.reap_unclaimed() == []  # too young yet
    _created_ago(cyborg, 3601)

    with caplog.at_level(logging.WARNING, logger="cyborg_lite.reclaim"):
        assert reclaimer.reap_unclaimed() == [lost.uuid]

    assert [(a.uuid, a.state) for a in _arq_rows(cyborg)] == [
        (retried, "Bound")]
    (line,) = [r.getMessage() for r in caplog.records
               if r.name == "cyborg_lite.reclaim"]
    assert line.startswith("Deleted 1 ARQ(s) created with a service token")
    assert lost.uuid in line


def _arq_rows(cyborg):
    return cyborg.db.read(lambda s: list(s.execute(
        sa.select(models.ARQ).order_by(models.ARQ.id)).scalars()))


def _created_ago(cyborg, seconds):
    cyborg.db.run(lambda s: s.execute(sa.update(models.ARQ).values(
        created_at=models.utcnow() - datetime.timedelta(seconds=seconds))))


def test_database_down_at_the_first_request_is_503(cut_able):
    cyborg, proxy = cut_able
    proxy.cut()
    # A new process: nothing pooled, the schema not yet checked.
    app = app_mod.create_app(
        cyborg.conf, db=db_engine.Database(
            cyborg.conf.database.connection), programmer=None)
    response = app.test_client().get("/v2/device_profiles",
                                     headers=cyborg_fixture.MEMBER)
    assert response.status_code == 503
    assert response.headers["Retry-After"] == "5"
    proxy.restore()
    response = app.test_client().get("/v2/device_profiles",
                                     headers=cyborg_fixture.MEMBER)
    assert response.status_code == 200


def test_connections_idle_across_a_restart_are_replaced_unseen(cut_able):
    cyborg, proxy = cut_able
    client = cyborg.client
    assert client.get("/v2/device_profiles",
                      headers=cyborg_fixture.MEMBER).status_code == 200
    # The server goes away and comes back while the pool sits idle.
    proxy.cut()
    proxy.restore()
    time.sleep(db_backends.PING_AFTER_IDLE + 0.2)
    response = client.get("/v2/device_profiles",
                          headers=cyborg_fixture.MEMBER)
    assert response.status_code == 200, response.get_data(as_text=True)


def test_background_pass_logs_one_line_while_the_database_is_lost(
        cut_able, caplog):
    cyborg, proxy = cut_able
    work = periodics_mod.Periodics(cyborg.conf, cyborg.db, None)
    task = periodics_mod.Task(
        "read-lease", "Reading a lease", 0,
        lambda: lease_db.get(cyborg.db, "programming"), at_start=True)
    proxy.cut()
    with caplog.at_level(logging.WARNING):
        work._loop(task)  # one pass: interval 0
    records = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(records) == 1, [r.getMessage() for r in records]
    assert not records[0].exc_info
    assert records[0].getMessage().startswith(
        "Reading a lease skipped, the database is unreachable; trying "
        "again in 0 s: ")
