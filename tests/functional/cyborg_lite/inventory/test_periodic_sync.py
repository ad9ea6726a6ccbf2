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


"""The API's periodic inventory sync against real Ironic: an app with
``[inventory] sync_interval`` picks up a node's devices (handles from the
embedded agent) without any command, and keeps running when Ironic is
unreachable."""

import json
import logging
import threading
import uuid

from keystoneauth1 import loading as ks_loading

from accel_tools.embedded.common import free_port
from cyborg_lite.api import app as app_mod
from cyborg_lite.db import engine as db_engine
from cyborg_lite.db import leases as lease_db
from cyborg_lite.inventory import lease as sync_lease
from tests.fixtures import cyborg as cyborg_fixtures
from tests.fixtures import polling
from tests.functional.cyborg_lite.inventory import test_sync_handles


def _app(tmp_path, ironic_url, host, document):
    """A cyborg_lite app (default Programmer, so background threads run)
    with ``[ironic]`` at ``ironic_url`` and a sync every second."""
    sim_inventory = tmp_path / "sim-inventory.json"
    sim_inventory.write_text(json.dumps(document))
    conf = cyborg_fixtures.make_conf(
        tmp_path, **{"agent.host": host,
                     "agent.sim_state_dir": str(tmp_path / "sim"),
                     "agent.sim_inventory_file": str(sim_inventory),
                     "agent.rpc_timeout": 5,
                     "programming.reconcile_on_start": False,
                     "programming.reconcile_interval": 0,
                     "inventory.sync_interval": 1})
    ks_loading.register_auth_conf_options(conf, "ironic")
    conf.set_override("auth_type", "none", "ironic")
    conf.set_override("endpoint_override", ironic_url, "ironic")
    conf.set_override("connection",
                      f"sqlite:///{tmp_path}/{uuid.uuid4().hex}.sqlite",
                      group="database")
    db = db_engine.Database.from_conf(conf)
    db.sync()
    return cyborg_fixtures.Cyborg(conf, db, app_mod.create_app(conf, db=db))


def _sync_threads():
    return [t for t in threading.enumerate() if t.name == "inventory-sync"]


def test_app_picks_up_node_devices_without_command(
        ironic_server, baremetal, tmp_path):
    host, document = test_sync_handles._host_with_node(baremetal)
    cyborg = _app(tmp_path, ironic_server.url, host, document)
    try:
        expected = {region["rp_uuid"]: sorted(
            h["pci_address"] for h in region["attach_handles"])
            for device in document["devices"]
            for region in device["regions"]}
        handles = polling.wait_for(
            lambda: test_sync_handles._handles(cyborg.db, host))
        # every region, with the handles only the agent knew (the
        # document in Ironic has none)
        assert handles == expected
        owner, _expires = lease_db.get(
            cyborg.db, sync_lease.LEASE_NAME)
        assert owner
    finally:
        test_sync_handles._close(cyborg)
    assert not _sync_threads()
    # Stopping gave the lease up: another worker takes over at once.
    assert lease_db.acquire(
        cyborg.db, sync_lease.LEASE_NAME, "next-worker", 60) is True
    cyborg.db.dispose()


def test_unreachable_ironic_is_logged_and_retried(tmp_path, caplog):
    dead_url = f"http://127.0.0.1:{free_port()}"
    host = f"down-{uuid.uuid4().hex[:8]}.example.org"
    document = cyborg_fixtures.load_example_inventory(host)
    caplog.set_level(logging.ERROR, logger="cyborg_lite.inventory.lease")
    cyborg = _app(tmp_path, dead_url, host, document)
    try:
        polling.wait_for(lambda: len(
            [r for r in caplog.records
             if "Inventory sync pass failed" in r.getMessage()]) >= 2,
            what="two failed sync passes in the log")
        assert _sync_threads() and _sync_threads()[0].is_alive()
    finally:
        test_sync_handles._close(cyborg)
