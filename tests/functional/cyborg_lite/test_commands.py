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


"""Console scripts and the WSGI entry point."""

import json
import os
import re
import subprocess
import sys

import pytest

from accel_tools import standalone
from accel_tools.demo import main as demo
from cyborg_lite import wsgi
from cyborg_lite.cmd import manage
from cyborg_lite.db import devices as device_db
from cyborg_lite.db import engine as db_engine
from cyborg_lite.db import migration
from tests.fixtures.cyborg import EXAMPLE_INVENTORY


@pytest.fixture
def config_file(tmp_path):
    path = tmp_path / "cyborg_lite.conf"
    path.write_text(f"[DEFAULT]\nstate_path = {tmp_path}\n"
                    "[oslo_policy]\npolicy_file = none.yaml\n"
                    + standalone.ini_text())
    return str(path)


def _manage(config_file, *args):
    with pytest.raises(SystemExit) as exit_info:
        manage.main(["--config-file", config_file, *args])
    return exit_info.value.code


def _summary(out):
    """The JSON summary the import prints last (logs may come before)."""
    start = [m.start() for m in re.finditer(r"^\{$", out, re.M)][-1]
    return json.loads(out[start:])


def _db(tmp_path):
    return db_engine.Database(f"sqlite:///{tmp_path}/cyborg_lite.sqlite")


def test_manage_db_sync_and_inventory_import(tmp_path, config_file,
                                             capsys):
    assert _manage(config_file, "db", "sync") == 0
    assert _manage(config_file, "inventory", "import", "--host", "h1",
                   EXAMPLE_INVENTORY) == 0
    summary = _summary(capsys.readouterr().out)
    assert summary["host"] == "h1"
    assert summary["attach_handles"]["created"] == 9
    assert _manage(config_file, "inventory", "import", "--host", "h1",
                   EXAMPLE_INVENTORY) == 0
    again = _summary(capsys.readouterr().out)
    assert again["changed"] is False
    db = _db(tmp_path)
    assert len(device_db.get_all(db, hostname="h1")) == 2


def test_bad_inventory_is_rejected_naming_the_field(tmp_path, config_file,
                                                    capsys):
    assert _manage(config_file, "db", "sync") == 0
    with open(EXAMPLE_INVENTORY, encoding="utf-8") as handle:
        document = json.load(handle)
    document["devices"][1]["regions"][0]["rp_uuid"] = "not-a-uuid"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(document))
    capsys.readouterr()
    assert _manage(config_file, "inventory", "import", str(bad)) == 1
    err = capsys.readouterr().err
    assert "devices[1].regions[0].rp_uuid" in err
    assert "nothing was changed" in err
    assert device_db.get_all(_db(tmp_path)) == []


def test_console_script_runs_from_the_installed_entry_point(tmp_path,
                                                            config_file):
    script = os.path.join(os.path.dirname(sys.executable),
                          "cyborg-lite-manage")
    result = subprocess.run([script, "--config-file", config_file, "db",
                             "sync"], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    assert "newest revision" in result.stdout


def _script(name):
    return os.path.join(os.path.dirname(sys.executable), name)


def test_every_command_finds_the_configuration_in_the_environment(
        tmp_path, monkeypatch):
    """CYBORG_LITE_CONFIG=F cyborg-lite-manage db sync migrates F's
    database (not the default one), says which, and the WSGI application
    built from the same variable serves from it."""
    home = tmp_path / "home"
    home.mkdir()
    state = tmp_path / "state"
    config = tmp_path / "from-env.conf"
    config.write_text(f"[DEFAULT]\nstate_path = {state}\n"
                      "[oslo_policy]\npolicy_file = none.yaml\n"
                      + standalone.ini_text())
    env = dict(os.environ, CYBORG_LITE_CONFIG=str(config), HOME=str(home))
    result = subprocess.run([_script("cyborg-lite-manage"), "db", "sync"],
                            capture_output=True, text=True, timeout=60,
                            env=env)
    assert result.returncode == 0, result.stderr
    database = f"sqlite:///{state}/cyborg_lite.sqlite"
    output = result.stdout + result.stderr
    assert result.stdout.strip().splitlines()[-1] == (
        f"{database}: schema migrated from empty to the newest revision "
        f"({migration.head()}).")
    assert f"configuration files: {config}; database: {database}" in output
    assert not (home / ".cyborg_lite").exists()

    again = subprocess.run([_script("cyborg-lite-manage"), "db", "sync"],
                           capture_output=True, text=True, timeout=60,
                           env=env)
    assert "schema already at the newest revision" in again.stdout

    monkeypatch.setenv("CYBORG_LITE_CONFIG", str(config))
    app = wsgi.init_application(argv=[])
    assert app.test_client().get("/v2/device_profiles").status_code == 200


def test_command_line_wins_and_a_missing_file_is_refused(tmp_path):
    named = tmp_path / "named.conf"
    named.write_text(f"[DEFAULT]\nstate_path = {tmp_path / 'named'}\n")
    env = dict(os.environ, CYBORG_LITE_CONFIG=str(tmp_path / "typo.conf"),
               HOME=str(tmp_path))
    result = subprocess.run([_script("cyborg-lite-manage"), "db", "sync"],
                            capture_output=True, text=True, timeout=60,
                            env=env)
    assert result.returncode != 0
    assert f"CYBORG_LITE_CONFIG names '{tmp_path}/typo.conf'" in (
        result.stdout + result.stderr)
    assert not (tmp_path / ".cyborg_lite").exists()
    result = subprocess.run([_script("cyborg-lite-manage"), "--config-file",
                             str(named), "db", "sync"],
                            capture_output=True, text=True, timeout=60,
                            env=env)
    assert result.returncode == 0, result.stderr
    assert f"{tmp_path}/named/cyborg_lite.sqlite" in result.stdout


def test_logs_mask_the_database_password(tmp_path, capsys):
    config = tmp_path / "secret.conf"
    config.write_text("[database]\nconnection = mysql+pymysql://cyborg:"
                      "s3cr3t-pw@127.0.0.1/cyborg_lite\n")
    result = subprocess.run(
        [_script("cyborg-lite-agent"), "--config-file", str(config)],
        capture_output=True, text=True, timeout=60,
        env=dict(os.environ, HOME=str(tmp_path)))
    assert "s3cr3t-pw" not in result.stderr + result.stdout
    assert "mysql+pymysql://cyborg:***@127.0.0.1/cyborg_lite" in (
        result.stdout + result.stderr)


def test_wsgi_application_reads_config_from_environment(
        tmp_path, config_file, monkeypatch):
    assert _manage(config_file, "db", "sync") == 0
    monkeypatch.setenv("CYBORG_LITE_CONFIG", config_file)
    app = wsgi.init_application(argv=[])
    response = app.test_client().get("/v2/device_profiles")
    assert response.status_code == 200
    assert response.get_json() == {"device_profiles": []}


def test_gunicorn_stops_on_a_file_it_cannot_parse(tmp_path):
    bad = tmp_path / "cyborg_lite.conf"
    bad.write_text("[DEFAULT]\nauth_strategy = noauth\n"
                   "[nova]  # where the events go\nauth_type = none\n")
    gunicorn = os.path.join(os.path.dirname(sys.executable), "gunicorn")
    env = dict(os.environ, CYBORG_LITE_CONFIG=str(bad))

    # the worker boots with the configuration read: no request is needed.
    # NOTE(cyborg_lite): one worker: when two fail at once, gunicorn 27's
    # halt reaps the second while stopping and exits 1 with a traceback
    # (it still stops, which is what the page promises).
    result = subprocess.run(
        [gunicorn, "--workers", "1", "--bind", "127.0.0.1:0",
         "--no-control-socket", "cyborg_lite.wsgi:application"],
        capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path)

    assert result.returncode == wsgi.BOOT_ERROR, result.stderr
    assert (f"cyborg-lite-wsgi-api: Failed to parse {bad}: at {bad}:3, "
            "Invalid section (must end with ]): '[nova]  # where the "
            "events go'") in result.stderr
    assert "Reason: Worker failed to boot." in result.stderr
    assert "Traceback" not in result.stderr


def test_standalone_demo_walks_through_the_api(tmp_path, capsys):
    assert demo.main(["--standalone",
                      "--state-dir", str(tmp_path / "state")]) == 0
    out = capsys.readouterr().out
    for text in ("POST /v2/device_profiles", "PATCH /v2/accelerator_requests",
                 "bind_state=resolved", '"state": "Bound"',
                 "PCI device 0000:5e:00.1",
                 "DELETE /v2/accelerator_requests?instance=",
                 "Demo finished"):
        assert text in out
