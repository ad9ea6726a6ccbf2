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

"""Fixtures of the DRA plugin tests (see :mod:`.env`)."""

import types

import pytest

from accel_common.placement import client as placement_client
from ironic_accel.placement import reporter
from tests.fixtures import placement as placement_fixture
from tests.functional.cyborg_lite_dra import env


@pytest.fixture
def cyborg_lite(tmp_path, request):
    """A real cyborg_lite with its sim agent (programming takes 0.3 s);
    parametrized indirectly, ``{"gpu": True}`` adds a whole GPU."""
    options = getattr(request, "param", None) or {}
    server = env.CyborgLite(tmp_path / "cyborg", **options)
    yield server
    server.close()


@pytest.fixture
def plugin_factory(tmp_path, cyborg_lite, kube_apiserver):
    """Make plugins on ``cyborg_lite`` and the stand-in API server:
    ``factory(**options)`` (not started); each stopped at the end."""
    made = []

    def factory(directory="plugin", **options):
        plugin = env.Plugin(tmp_path / directory, cyborg_lite,
                            kube_apiserver, **options)
        made.append(plugin)
        return plugin

    yield factory
    for plugin in made:
        plugin.close()


@pytest.fixture
def slow_node(tmp_path, kube_apiserver):
    """``slow_node(program_seconds)``: a cyborg_lite whose programming
    takes that long and a plugin on it, started, whose kubelet calls wait
    1 s (``[dra] prepare_wait``); ``(cyborg_lite, plugin)``, both closed
    after the test."""
    made = []

    def factory(program_seconds):
        slow = env.CyborgLite(tmp_path / "slow",
                              program_seconds=program_seconds)
        made.append(slow)
        plugin = env.Plugin(tmp_path / "plugin", slow, kube_apiserver,
                            **{"dra.prepare_wait": 1})
        made.append(plugin)
        return slow, plugin.start()

    yield factory
    for each in reversed(made):
        each.close()


@pytest.fixture
def plugin(plugin_factory):
    """One plugin, started and registered."""
    return plugin_factory().start()


@pytest.fixture
def node(tmp_path, placement_server, kube_apiserver, request):
    """cyborg_lite's node reported to a real Placement (as the Ironic
    conductor reports it), and a plugin factory with ``[placement]``;
    parametrized indirectly, the options of :class:`env.CyborgLite`."""
    server = env.CyborgLite(tmp_path / "cyborg",
                            **(getattr(request, "param", None) or {}))
    conn = placement_server.connection()
    root, _ = placement_fixture.create_compute_node(conn, name=server.host)
    reporter.report(placement_client.Client(conn), server.document)
    made = []

    def plugin(directory="plugin", **options):
        made.append(env.Plugin(tmp_path / directory, server, kube_apiserver,
                               **{"placement.auth_type": "admin_token",
                                  "placement.endpoint": placement_server.url,
                                  "placement.token": "admin", **options}))
        return made[-1]

    yield types.SimpleNamespace(
        cyborg=server, root=root, plugin=plugin,
        api=placement_fixture.PlacementAPI(placement_server.url))
    for each in made:
        each.close()
    server.close()
    conn.close()
