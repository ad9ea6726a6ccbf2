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

"""The conductor periodic's per-node body against a real Placement."""

import inspect
import types

from futurist import periodics as futurist_periodics
from ironic.conductor import periodics
from ironic.conf import CONF
from keystoneauth1 import loading as ks_loading
import pytest

from ironic_accel.placement import periodic
from tests.functional import documents

METHOD = periodic.PlacementReportMixin._report_accelerators_to_placement
#: The per-node body, without the node iteration of node_periodic.
BODY = inspect.unwrap(METHOD)


@pytest.fixture
def ironic_conf(placement_server):
    """Ironic's global CONF pointed at the test Placement, then restored."""
    plugin_opts = ks_loading.get_auth_plugin_conf_options("admin_token")
    CONF.register_opts(plugin_opts, group="placement")
    overrides = {"auth_type": "admin_token", "endpoint": placement_server.url,
                 "token": "admin"}
    for name, value in overrides.items():
        CONF.set_override(name, value, "placement")
    yield CONF
    for name in overrides:
        CONF.clear_override(name, "placement")


def test_periodic_is_declared_with_configured_spacing():
    assert futurist_periodics.is_periodic(METHOD)
    CONF.set_override("report_interval", 42, "accel_placement")
    try:
        periodics.refresh_periodic_attributes(METHOD)
        assert METHOD._periodic_spacing == 42
        assert METHOD._is_periodic
        CONF.set_override("report_interval", 0, "accel_placement")
        periodics.refresh_periodic_attributes(METHOD)
        assert not METHOD._is_periodic
    finally:
        CONF.clear_override("report_interval", "accel_placement")


def test_periodic_reports_a_node_document(ironic_conf, placement_conn,
                                          compute_node):
    root_uuid, host = compute_node
    doc = documents.document(host)
    node = types.SimpleNamespace(uuid=doc["node_uuid"],
                                 extra={"accelerators": doc})
    task = types.SimpleNamespace(node=node)
    BODY(periodic.PlacementReportMixin(), task, None, None)
    resp = placement_conn.placement.get(
        f"/resource_providers?in_tree={root_uuid}", microversion="1.39")
    assert len(resp.json()["resource_providers"]) == 5


def test_periodic_logs_and_survives_a_missing_compute_node(ironic_conf,
                                                           caplog):
    doc = documents.document("not-registered.example.org")
    task = types.SimpleNamespace(node=types.SimpleNamespace(
        uuid=doc["node_uuid"], extra={"accelerators": doc}))
    BODY(periodic.PlacementReportMixin(), task, None, None)
    assert "no compute-node resource provider named" in caplog.text
