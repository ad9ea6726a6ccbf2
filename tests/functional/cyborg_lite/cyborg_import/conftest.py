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

"""Fixtures of the import tests that adopt a card (see :mod:`.cloud`)."""

import pytest

from accel_tools.embedded import placement
from tests.fixtures.cyborg import make_cyborg


@pytest.fixture
def lite_on_placement(tmp_path, db_url, placement_server):
    """cyborg_lite on each database, with no inventory, on Placement."""
    instance = make_cyborg(tmp_path, db_url=db_url, inventory=False)
    placement.apply_client_conf(instance.conf, "placement",
                                placement_server.url)
    yield instance
    instance.app.extensions["cyborg_lite"].notifier.shutdown()
    instance.db.dispose()
