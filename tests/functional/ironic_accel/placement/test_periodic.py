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

import copy
import inspect
import types

from futurist import periodics as futurist_periodics
from ironic.conductor import periodics
from ironic.conf import CONF
from keystoneauth1 import loading as ks_loading
import pytest

from ironic_accel.placement import periodic
from ironic_accel.placement import reporter
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


def _task(doc):
    return types.SimpleNamespace(node=types.SimpleNamespace(
        uuid=doc["node_uuid"], extra={"accelerators": doc}))


def _requests(conf):
    client = reporter._make_client(conf)
    return client.reads + client.writes


def _providers(conn, root_uuid):
    resp = conn.placement.get(
        f"/resource_providers?in_tree={root_uuid}", microversion="1.39")
    return {rp["uuid"] for rp in resp.json()["resource_providers"]}


@pytest.fixture
def every(ironic_conf):
    """``every(n)``: set [accel_placement] full_report_every for a test."""
    reporter.forget_reports()

    def set_(n):
        CONF.set_override("full_report_every", n, "accel_placement")
    yield set_
    CONF.clear_override("full_report_every", "accel_placement")
    reporter.forget_reports()


def test_a_no_change_pass_sends_no_request_to_placement(
        every, ironic_conf, placement_conn, compute_node):
    every(3)
    root_uuid, host = compute_node
    task = _task(documents.document(host))
    mixin = periodic.PlacementReportMixin()
    BODY(mixin, task, None, None)  # first pass: reported in full
    assert len(_providers(placement_conn, root_uuid)) == 5
    before = _requests(ironic_conf)
    BODY(mixin, task, None, None)
    assert _requests(ironic_conf) == before


def test_drift_is_repaired_by_the_full_pass(every, ironic_conf,
                                           placement_conn, compute_node):
    every(3)
    root_uuid, host = compute_node
    doc = documents.document(host)
    task = _task(doc)
    mixin = periodic.PlacementReportMixin()
    BODY(mixin, task, None, None)
    children = _providers(placement_conn, root_uuid) - {root_uuid}
    gone = sorted(children)[0]
    # behind the reporter's back: a provider removed in Placement
    placement_conn.placement.delete(f"/resource_providers/{gone}",
                                    microversion="1.39")
    BODY(mixin, task, None, None)  # 2nd pass: skipped
    BODY(mixin, task, None, None)  # 3rd pass: skipped
    assert gone not in _providers(placement_conn, root_uuid)
    BODY(mixin, task, None, None)  # 4th pass: the full one
    assert gone in _providers(placement_conn, root_uuid)


def test_a_changed_document_is_reported_at_once(every, ironic_conf,
                                               placement_conn, compute_node):
    every(100)
    root_uuid, host = compute_node
    doc = documents.document(host)
    mixin = periodic.PlacementReportMixin()
    BODY(mixin, _task(doc), None, None)
    before = _requests(ironic_conf)
    changed = copy.deepcopy(doc)
    changed["devices"] = changed["devices"][:-1]
    BODY(mixin, _task(changed), None, None)
    assert _requests(ironic_conf) > before
    assert len(_providers(placement_conn, root_uuid)) < 5


def test_a_held_name_is_taken_on_the_next_pass(every, ironic_conf,
                                               placement_conn, compute_node):
    every(100)
    root_uuid, host = compute_node
    doc = documents.document(host)
    name = f"{host}_{doc['devices'][0]['pci_address']}"
    resp = placement_conn.placement.post("/resource_providers", json={
        "name": name, "parent_provider_uuid": root_uuid},
        microversion="1.39")
    assert resp.status_code == 200, resp.text
    mixin = periodic.PlacementReportMixin()
    BODY(mixin, _task(doc), None, None)
    rp_uuid = doc["devices"][0]["regions"][0]["rp_uuid"]
    url = f"/resource_providers/{rp_uuid}"
    assert placement_conn.placement.get(
        url, microversion="1.39").json()["name"] != name
    # The holder goes; the next pass, not a full one, renames the region.
    placement_conn.placement.delete(
        f"/resource_providers/{resp.json()['uuid']}", microversion="1.39")
    BODY(mixin, _task(doc), None, None)
    assert placement_conn.placement.get(
        url, microversion="1.39").json()["name"] == name
    before = _requests(ironic_conf)
    BODY(mixin, _task(doc), None, None)
    assert _requests(ironic_conf) == before
