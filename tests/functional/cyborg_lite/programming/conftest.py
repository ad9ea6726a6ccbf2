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

"""Fixtures of the programming tests."""

import uuid

import pytest

from cyborg_lite.api import app as app_mod
from cyborg_lite.db import engine as db_engine
from cyborg_lite.inventory import apply as inventory_apply
from tests.fixtures.cyborg import make_conf
from tests.fixtures.cyborg_server import make_inventory
from tests.functional.cyborg_lite.programming import env


class EmbeddedApi:
    """cyborg_lite as one process would run it by default: the API, its
    programmer and the agent (sim driver) on the in-process transport."""

    def __init__(self, tmp_path, nova, document=None, db_url=None,
                 **overrides):
        self.document = document or make_inventory(
            handles_per_region=(2, 2))
        self.host = self.document["host"]
        self.device = self.document["devices"][0]
        self.pci = self.device["pci_address"]
        self.rps = [r["rp_uuid"] for r in self.device["regions"]]
        self.state_dir = str(tmp_path / "sim")
        options = {
            "agent.host": f"embedded-{uuid.uuid4().hex[:12]}",
            "agent.sim_state_dir": self.state_dir,
            "agent.sim_inventory_file": env.write_document(
                tmp_path / "inventory.json", self.document),
            "agent.image_catalog_dir": env.make_catalog(tmp_path / "cat"),
            "agent.sim_program_seconds": 0.3,
            "agent.rpc_timeout": 5,
            "programming.heartbeat_interval": 0.2,
            "programming.reconcile_on_start": False,
            "programming.reconcile_interval": 0,
            "nova.notify_retry_interval": 0.05,
        }
        if nova is not None:
            options.update({"nova.auth_type": "none",
                            "nova.endpoint_override": nova.endpoint})
        options.update(overrides)
        self.conf = make_conf(tmp_path, **options)
        self.conf.set_override(
            "connection",
            db_url or f"sqlite:///{tmp_path}/{uuid.uuid4().hex}.sqlite",
            group="database")
        self.db = db_engine.Database.from_conf(self.conf)
        self.db.sync()
        inventory_apply.apply_document(self.db, self.document)
        self.app = app_mod.create_app(self.conf, db=self.db)
        self.services = self.app.extensions["cyborg_lite"]
        self.programmer = self.services.programmer
        self.client = env.Client(self.app)

    def bind(self, arqs, rp=None, instance=None):
        """Bind ``arqs`` to region 0 (or ``rp``) for a new instance."""
        instance = instance or str(uuid.uuid4())
        status, body = self.client.bind(arqs, rp or self.rps[0], instance,
                                        self.host)
        return status, body, instance

    def region(self, index=0):
        return env.region_row(self.db, self.rps[index])

    def sim(self, index=0):
        return env.sim_region(self.state_dir, self.pci, str(index))

    def close(self):
        self.services.stop()
        self.services.notifier.shutdown()
        self.db.dispose()


@pytest.fixture
def embedded_factory(tmp_path, nova_standin):
    """Build :class:`EmbeddedApi` instances; each stopped after the test."""
    made = []

    def factory(document=None, nova=True, db_url=None, **overrides):
        directory = tmp_path / f"api{len(made)}"
        directory.mkdir()
        api = EmbeddedApi(directory, nova_standin if nova else None,
                          document=document, db_url=db_url, **overrides)
        made.append(api)
        return api

    yield factory
    for api in made:
        api.close()


@pytest.fixture
def embedded(embedded_factory):
    """One :class:`EmbeddedApi` with a dynamic FPGA of 2 regions x 2
    handles, reporting to the Nova stand-in."""
    return embedded_factory()


@pytest.fixture
def reported(db_url, embedded_factory, placement_server):
    """An embedded API (on each database backend) using the real
    Placement, its regions reported there, and a client to look at
    them."""
    api = embedded_factory(db_url=db_url,
                           **{"agent.sim_program_seconds": 1.0})
    conn = placement_server.connection()
    yield api, env.report_to_placement(api, placement_server, conn)
    conn.close()
