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

"""An API, its periodic passes and the agent on a database whose schema is
missing or behind the code: 503 and one line per pass, never a 500 or a
traceback; after ``db sync``, everything works without a restart."""

import json
import logging
import subprocess
import sys
import time

import pytest

from cyborg_lite.api import app as app_mod
from cyborg_lite.cmd import agent as agent_cmd
from cyborg_lite.db import engine as db_engine
from cyborg_lite.db import migration
from tests.fixtures.cyborg import ADMIN
from tests.fixtures.cyborg import make_conf
from tests.fixtures.cyborg import MEMBER


def _fault(response):
    return json.loads(response.get_json()["error_message"])["faultstring"]


def test_api_answers_503_until_db_sync_then_serves(db_url, tmp_path):
    conf = make_conf(tmp_path, **{"database.connection": db_url})
    db = db_engine.Database(db_url)
    app = app_mod.create_app(conf, db=db, programmer=None)
    client = app.test_client()
    try:
        # The version documents need no database.
        assert client.get("/").status_code == 200
        assert client.get("/v2").status_code == 200
        for path in ("/v2/device_profiles", "/v2/accelerator_requests",
                     "/accelerator/v2/devices"):
            response = client.get(path, headers=ADMIN)
            assert response.status_code == 503, path
            message = _fault(response)
            assert "has no cyborg_lite schema" in message
            assert f"needs revision {migration.head()}" in message
            assert "cyborg-lite-manage db sync" in message

        migration.upgrade(db.engine, "0002")
        message = _fault(client.get("/v2/device_profiles", headers=ADMIN))
        assert "is at schema revision 0002" in message

        db.sync()
        assert client.get("/v2/device_profiles",
                          headers=MEMBER).status_code == 200
    finally:
        db.dispose()


def test_periodic_passes_log_one_line_until_the_schema_is_current(
        tmp_path, caplog):
    url = f"sqlite:///{tmp_path}/behind.sqlite"
    conf = make_conf(tmp_path, **{
        "database.connection": url,
        "programming.reconcile_interval": 0.2,
        "programming.heartbeat_interval": 0.2})
    db = db_engine.Database(url)
    caplog.set_level(logging.INFO, logger="cyborg_lite")
    app = app_mod.create_app(conf, db=db)
    svc = app.extensions["cyborg_lite"]
    try:
        time.sleep(1)
        skipped = [r for r in caplog.records
                   if "skipped; trying again" in r.getMessage()]
        assert skipped, [r.getMessage() for r in caplog.records]
        assert all(r.exc_info is None for r in caplog.records
                   if r.levelno >= logging.ERROR)
        assert "cyborg-lite-manage db sync" in skipped[0].getMessage()

        db.sync()
        time.sleep(0.3)
        caplog.clear()
        time.sleep(0.6)
        assert not [r for r in caplog.records
                    if "skipped; trying again" in r.getMessage()]
        assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    finally:
        svc.stop()
        db.dispose()


def test_agent_refuses_to_start_on_a_database_behind_the_code(tmp_path):
    url = f"sqlite:///{tmp_path}/agent.sqlite"
    config = tmp_path / "agent.conf"
    config.write_text(f"[DEFAULT]\ntransport_url = rabbit://guest:guest@"
                      f"127.0.0.1:5672/\n[database]\nconnection = {url}\n")
    try:
        agent_cmd.main(["--config-file", str(config)])
    except SystemExit as exit:
        message = str(exit.code)
    else:
        raise AssertionError("the agent started")
    assert message.startswith("cyborg-lite-agent: The database has no "
                              "cyborg_lite schema")
    assert "cyborg-lite-manage db sync" in message


# NOTE(tests): None in sys.modules makes ``import pymysql`` fail as it does
# where the package is absent: a compute host installed without extras.
_WITHOUT_PYMYSQL = """
import sys
sys.modules["pymysql"] = None
from cyborg_lite.cmd import agent
agent.main(sys.argv[1:])
"""


@pytest.mark.rabbitmq
def test_agent_without_the_database_driver_starts_and_says_so(
        tmp_path, rabbitmq_url):
    config = tmp_path / "agent.conf"
    config.write_text(
        f"[DEFAULT]\ntransport_url = {rabbitmq_url}\n"
        "[database]\nconnection = mysql+pymysql://cyborg_lite:secret@"
        "db.example.org/cyborg_lite?charset=utf8mb4\n"
        f"[agent]\nhost = nodriver-{time.monotonic_ns()}.example.org\n"
        f"enabled_drivers = sim\nsim_state_dir = {tmp_path / 'sim'}\n")
    log = tmp_path / "agent.log"
    with open(log, "w") as out:
        agent = subprocess.Popen(
            [sys.executable, "-c", _WITHOUT_PYMYSQL, "--config-file",
             str(config)], stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while "agent serving topic" not in log.read_text():
            assert agent.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
    finally:
        agent.terminate()
        agent.wait(30)
    text = log.read_text()
    assert "ModuleNotFoundError" not in text and "Traceback" not in text
    assert ("[database] connection names mysql+pymysql://cyborg_lite:***@"
            "db.example.org/cyborg_lite?charset=utf8mb4, whose driver is "
            "not installed here") in text
    assert "leave [database] out of a compute host's configuration" in text
