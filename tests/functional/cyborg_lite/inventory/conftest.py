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

"""Fixtures of the inventory tests that run ``cyborg-lite-manage`` (see
:mod:`.commands`)."""

import pytest

from accel_tools import standalone
from accel_tools.embedded import placement as placement_launcher


@pytest.fixture
def config_file(tmp_path, placement_server):
    """A cyborg_lite configuration file on the session's Placement (its
    database under ``tmp_path``); its path."""
    path = tmp_path / "cyborg_lite.conf"
    path.write_text(f"[DEFAULT]\nstate_path = {tmp_path}\n"
                    "[oslo_policy]\npolicy_file = none.yaml\n"
                    + standalone.ini_text()
                    + placement_launcher.client_conf_text(
                        placement_server.url))
    return str(path)
