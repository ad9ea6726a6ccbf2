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

"""Every test here keeps the conductor's image copies in its own tmp_path:
the per-node work directory (``tempfile.gettempdir()``) and Ironic's
``[deploy] http_root``."""

import tempfile

from ironic.conf import CONF
import pytest


@pytest.fixture(autouse=True)
def staging_dirs(tmp_path, monkeypatch):
    """``(work directory, http_root)`` of this test; the http_url is set
    but served only by the tests that start a server on it."""
    work = tmp_path / "conductor-tmp"
    http_root = tmp_path / "httpboot"
    work.mkdir()
    http_root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(work))
    CONF.set_override("http_root", str(http_root), group="deploy")
    CONF.set_override("http_url", "http://127.0.0.1:9/", group="deploy")
    yield work, http_root
    CONF.clear_override("http_root", group="deploy")
    CONF.clear_override("http_url", group="deploy")
