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

"""``cyborg-lite-manage pools ...`` and ``programming ...`` as an operator
runs them: the console script, a config file, the embedded agent."""

import json
import subprocess
import sys
import uuid

from accel_tools import standalone
from cyborg_lite.db import deployables as deployable_db
from cyborg_lite.db import engine as db_engine
from cyborg_lite.inventory import apply as inventory_apply
from tests.fixtures.cyborg_server import make_inventory
from tests.functional.cyborg_lite.programming import env


def _manage(config, *args):
    script = [sys.executable, "-m", "cyborg_lite.cmd.manage",
              "--config-file", str(config), *args]
    return subprocess.run(script, capture_output=True, text=True,
                          timeout=120)


def test_reconcile_fills_pools_and_status_shows_them(tmp_path):
    document = make_inventory(handles_per_region=(1, 1))
    db_url = f"sqlite:///{tmp_path}/cyborg.sqlite"
    db = db_engine.Database(db_url)
    db.sync()
    inventory_apply.apply_document(db, document)
    config = tmp_path / "cyborg_lite.conf"
    config.write_text(f"""
[DEFAULT]
log_file = {tmp_path}/manage.log

[database]
connection = {db_url}

[agent]
host = manage-{uuid.uuid4().hex[:8]}
sim_state_dir = {tmp_path}/sim
sim_inventory_file = {env.write_document(tmp_path / "inv.json", document)}
image_catalog_dir = {env.make_catalog(tmp_path / "catalog")}
sim_program_seconds = 0

[pools]
policies = nlb0:1, gzip:3
""" + standalone.ini_text())

    before = _manage(config, "pools", "status")
    reconciled = _manage(config, "programming", "reconcile")
    after = _manage(config, "pools", "status", "--json")

    assert before.returncode == 0, before.stderr
    lines = before.stdout.splitlines()
    assert lines[0].split() == ["pool", "function", "class", "desired",
                                "ready", "programming", "in", "use",
                                "missing"]
    assert "config:gzip" in before.stdout
    assert reconciled.returncode == 0, reconciled.stderr
    started = json.loads(reconciled.stdout)["pools"]
    # Two regions for four wanted: one each (pools are filled in turns),
    # the rest reported missing.
    assert {k: len(v) for k, v in started.items()} == {
        "config:gzip": 1, "config:nlb0": 1}
    rows = {r["name"]: r for r in json.loads(after.stdout)}
    assert {n: (r["desired"], r["ready"], r["missing"])
            for n, r in rows.items()} == {"config:gzip": (3, 1, 2),
                                          "config:nlb0": (1, 1, 0)}
    functions = sorted(d.function_id for d in deployable_db.get_all(db))
    assert functions == ["gzip", "nlb0"]
    db.dispose()


def test_bad_pool_policy_is_reported_clearly(tmp_path):
    config = tmp_path / "cyborg_lite.conf"
    db_url = f"sqlite:///{tmp_path}/cyborg.sqlite"
    db_engine.Database(db_url).sync()
    config.write_text(f"[database]\nconnection = {db_url}\n"
                      f"[pools]\npolicies = nlb0:many\n")

    result = _manage(config, "pools", "status")

    assert result.returncode == 2
    assert "Invalid function pool 'nlb0:many': N must be an integer" in \
        result.stderr
