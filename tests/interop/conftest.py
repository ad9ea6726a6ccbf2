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

"""Real clients against a real cyborg_lite (gunicorn, sqlite).

One server and one Nova stand-in per test session (so per xdist worker);
each test imports its own inventory (its own host and regions) with
``fresh_inventory``, creates its own profiles and instances, and filters the
stand-in's events by its own instance uuids, so tests never interfere.
"""

import pytest

from tests.fixtures.cyborg_server import CyborgServer
from tests.fixtures.cyborg_server import make_inventory
from tests.fixtures.nova_standin import NovaStandin


@pytest.fixture(scope="session")
def nova():
    """The Nova stand-in the server notifies."""
    with NovaStandin() as standin:
        yield standin


@pytest.fixture(autouse=True)
def _nova_answers_ok(nova):
    nova.answer_ok()
    yield
    nova.answer_ok()


@pytest.fixture(scope="session")
def server(tmp_path_factory, nova):
    """cyborg_lite under gunicorn (2 workers, sqlite), example inventory
    imported, notifying the module's Nova stand-in (fast retries)."""
    server = CyborgServer(
        tmp_path_factory.mktemp("cyborg"), nova_url=nova.endpoint,
        options={"nova": {"notify_retry_interval": "0.05",
                          "notify_instant_binds": "true"}})
    with server:
        yield server


@pytest.fixture
def fresh_inventory(server):
    """Import a new inventory for this test: ``fresh_inventory(4, 1)`` gives
    one FPGA with a 4-handle and a 1-handle region on a new host."""

    def importer(*handles_per_region):
        document = make_inventory(handles_per_region=handles_per_region)
        server.import_inventory(document)
        return document

    return importer
