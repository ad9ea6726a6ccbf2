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

"""The reporter against a real Placement."""

import copy
import types
import uuid

from oslo_config import cfg
import pytest

from accel_common.placement import client as placement_client
from accel_common.placement import tree
from accel_tools.embedded import placement as embedded_placement
from ironic_accel import conf as accel_conf
from ironic_accel import exception as accel_exception
from ironic_accel.placement import reporter
from tests.fixtures import placement as fx
from tests.functional import documents

MV = "1.39"


def _get(conn, url):
    resp = conn.placement.get(url, microversion=MV)
    assert resp.status_code == 200, resp.text
    return resp.json()


def _put(conn, url, body):
    resp = conn.placement.put(url, json=body, microversion=MV)
    assert resp.status_code in (200, 201, 204), resp.text
    return resp.json() if resp.content else None


def _children(conn, root_uuid):
    rps = _get(conn, f"/resource_providers?in_tree={root_uuid}")
    return {rp["uuid"]: rp for rp in rps["resource_providers"]
            if rp["uuid"] != root_uuid}


def _inventory(conn, rp_uuid):
    return _get(conn, f"/resource_providers/{rp_uuid}/inventories")


def _traits(conn, rp_uuid):
    return set(_get(conn, f"/resource_providers/{rp_uuid}/traits")["traits"])


def _allocate(conn, rp_uuid, rc, amount=1):
    consumer = str(uuid.uuid4())
    _put(conn, f"/allocations/{consumer}", {
        "allocations": {rp_uuid: {"resources": {rc: amount}}},
        "project_id": str(uuid.uuid4()), "user_id": str(uuid.uuid4()),
        "consumer_generation": None, "consumer_type": "INSTANCE"})
    return consumer


@pytest.fixture
def reported(placement_conn, compute_node):
    """A host with its 4-device document reported once."""
    root_uuid, host = compute_node
    doc = documents.document(host)
    client = placement_client.Client(placement_conn)
    result = reporter.report(client, doc)
    return types.SimpleNamespace(root=root_uuid, host=host, doc=doc,
                                 client=client, result=result)


def test_first_report_creates_nested_providers(placement_conn, reported):
    assert len(reported.result.created) == 4
    children = _children(placement_conn, reported.root)
    fpga = reported.doc["devices"][0]
    rp_uuid = fpga["regions"][0]["rp_uuid"]
    assert set(children) == {d["regions"][0]["rp_uuid"]
                             for d in reported.doc["devices"]}
    rp = children[rp_uuid]
    assert rp["name"] == f"{reported.host}_{fpga['pci_address']}"
    assert rp["parent_provider_uuid"] == reported.root
    inv = _inventory(placement_conn, rp_uuid)["inventories"]
    assert inv["FPGA"]["total"] == inv["FPGA"]["max_unit"] == 2
    assert inv["FPGA"]["reserved"] == 0
    assert _traits(placement_conn, rp_uuid) == {
        "OWNER_CYBORG", "CUSTOM_FPGA_INTEL", "CUSTOM_FPGA_INTEL_PAC_ARRIA10",
        "CUSTOM_FPGA_PRODUCT_ID_0B30"}
    gpu_uuid = reported.doc["devices"][2]["regions"][0]["rp_uuid"]
    assert _inventory(placement_conn, gpu_uuid)["inventories"]["PGPU"][
        "total"] == 1
    assert "CUSTOM_NVIDIA_1EB8" in _traits(placement_conn, gpu_uuid)


def test_no_change_report_writes_nothing(reported):
    before = len(reported.client.write_log)
    result = reporter.report(reported.client, reported.doc)
    assert result.writes == 0
    assert len(reported.client.write_log) == before
    assert len(result.unchanged) == 4
    # The providers' generations match what this client last wrote, so
    # only the compute node and the tree listing are read.
    assert result.reads == 2


def test_no_change_report_from_a_new_client_reads_and_writes_nothing(
        placement_conn, reported):
    client = placement_client.Client(placement_conn)
    result = reporter.report(client, reported.doc)
    assert result.writes == 0
    assert result.reads == 2 + 2 * 4


def test_change_by_someone_else_is_seen_despite_snapshots(placement_conn,
                                                          reported):
    rp_uuid = reported.doc["devices"][0]["regions"][0]["rp_uuid"]
    inv = _inventory(placement_conn, rp_uuid)
    _put(placement_conn, f"/resource_providers/{rp_uuid}/inventories", {
        "resource_provider_generation": inv["resource_provider_generation"],
        "inventories": {"FPGA": dict(inv["inventories"]["FPGA"], total=7,
                                     max_unit=7)}})
    result = reporter.report(reported.client, reported.doc)
    assert result.updated == [rp_uuid]
    assert _inventory(placement_conn, rp_uuid)["inventories"]["FPGA"][
        "total"] == 2


def test_one_changed_device_writes_only_its_provider(placement_conn,
                                                     reported):
    doc = copy.deepcopy(reported.doc)
    region = doc["devices"][1]["regions"][0]
    region["attach_handles"].append(
        {"type": "PCI", "pci_address": "0000:5f:00.7"})
    before = len(reported.client.write_log)
    result = reporter.report(reported.client, doc)
    writes = list(reported.client.write_log)[before:]
    assert result.updated == [region["rp_uuid"]]
    assert writes == [
        ("PUT", f"/resource_providers/{region['rp_uuid']}/inventories")]
    inv = _inventory(placement_conn, region["rp_uuid"])["inventories"]
    assert inv["FPGA"]["total"] == inv["FPGA"]["max_unit"] == 3


class _RacingClient(placement_client.Client):
    """Lets another writer change the provider just before our write."""

    def __init__(self, conn, other_conn, races=1):
        super().__init__(conn)
        self.other_conn = other_conn
        self.races = races

    def set_inventories(self, rp_uuid, generation, inventories):
        if self.races:
            self.races -= 1
            current = _get(self.other_conn,
                           f"/resource_providers/{rp_uuid}/traits")
            trait = f"CUSTOM_OPERATOR_GOLD_{self.races}"
            _put(self.other_conn, f"/traits/{trait}", None)
            _put(self.other_conn, f"/resource_providers/{rp_uuid}/traits", {
                "resource_provider_generation":
                    current["resource_provider_generation"],
                "traits": current["traits"] + [trait]})
        return super().set_inventories(rp_uuid, generation, inventories)


def test_concurrent_update_is_retried(placement_conn, reported):
    doc = copy.deepcopy(reported.doc)
    region = doc["devices"][0]["regions"][0]
    region["attach_handles"].pop()
    racing = _RacingClient(placement_conn, placement_conn)
    result = reporter.report(racing, doc)
    assert result.conflicts == 1
    inv = _inventory(placement_conn, region["rp_uuid"])["inventories"]
    assert inv["FPGA"]["total"] == 1
    # The other writer's trait survived the retry.
    assert "CUSTOM_OPERATOR_GOLD_0" in _traits(placement_conn,
                                             region["rp_uuid"])


def test_conflict_retries_are_bounded(placement_conn, reported):
    doc = copy.deepcopy(reported.doc)
    doc["devices"][0]["regions"][0]["attach_handles"].pop()
    racing = _RacingClient(placement_conn, placement_conn, races=10)
    with pytest.raises(accel_exception.ReportError, match="gave up after 3"):
        reporter.report(racing, doc, retries=2)


def test_vanished_device_without_allocations_is_deleted(placement_conn,
                                                          reported):
    doc = copy.deepcopy(reported.doc)
    gone = doc["devices"].pop(3)["regions"][0]["rp_uuid"]
    result = reporter.report(reported.client, doc)
    assert result.deleted == [gone]
    assert gone not in _children(placement_conn, reported.root)


def test_vanished_device_with_allocations_is_kept_reserved(placement_conn,
                                                            reported):
    doc = copy.deepcopy(reported.doc)
    device = doc["devices"].pop(0)
    gone = device["regions"][0]["rp_uuid"]
    consumer = _allocate(placement_conn, gone, "FPGA")

    result = reporter.report(reported.client, doc)
    assert result.retired == [gone]
    inv = _inventory(placement_conn, gone)["inventories"]["FPGA"]
    assert inv["reserved"] == inv["total"] == 2
    allocs = _get(placement_conn, f"/allocations/{consumer}")["allocations"]
    assert allocs[gone]["resources"] == {"FPGA": 1}

    again = reporter.report(reported.client, doc)
    assert again.writes == 0

    # The device comes back: the reporter lifts its own reservation.
    back = reporter.report(reported.client, reported.doc)
    assert gone in back.updated
    assert _inventory(placement_conn, gone)["inventories"]["FPGA"][
        "reserved"] == 0
    assert tree.RETIRED_TRAIT not in _traits(placement_conn, gone)


def test_reserved_and_function_traits_of_others_are_preserved(
        placement_conn, reported):
    rp_uuid = reported.doc["devices"][0]["regions"][0]["rp_uuid"]
    inv = _inventory(placement_conn, rp_uuid)
    # cyborg_lite is programming the region: reserved = total and its
    # function trait on the provider.
    record = dict(inv["inventories"]["FPGA"], reserved=2)
    body = _put(placement_conn, f"/resource_providers/{rp_uuid}/inventories",
                {"resource_provider_generation":
                     inv["resource_provider_generation"],
                 "inventories": {"FPGA": record}})
    function = "CUSTOM_FPGA_FUNCTION_ID_INTEL_GZIP"
    _put(placement_conn, f"/traits/{function}", None)
    traits = _traits(placement_conn, rp_uuid) | {function}
    _put(placement_conn, f"/resource_providers/{rp_uuid}/traits",
         {"resource_provider_generation": body["resource_provider_generation"],
          "traits": sorted(traits)})

    doc = copy.deepcopy(reported.doc)
    region = doc["devices"][0]["regions"][0]
    region["function_id"] = "crc-32"
    region["attach_handles"].append(
        {"type": "PCI", "pci_address": "0000:5e:00.5"})
    reporter.report(reported.client, doc)

    inv = _inventory(placement_conn, rp_uuid)["inventories"]["FPGA"]
    assert (inv["total"], inv["reserved"]) == (3, 2)
    now = _traits(placement_conn, rp_uuid)
    assert function in now
    assert "CUSTOM_FPGA_FUNCTION_ID_INTEL_CRC_32" not in now


def test_function_trait_from_document_when_region_has_none(placement_conn,
                                                           compute_node):
    root_uuid, host = compute_node
    node = str(uuid.uuid4())
    doc = documents.document(host, node, [
        documents.fpga(node, 0, function_id="crc-32")])
    client = placement_client.Client(placement_conn)
    reporter.report(client, doc)
    rp_uuid = doc["devices"][0]["regions"][0]["rp_uuid"]
    assert "CUSTOM_FPGA_FUNCTION_ID_INTEL_CRC_32" in _traits(placement_conn,
                                                             rp_uuid)


def test_foreign_children_and_traits_are_left_alone(placement_conn,
                                                    reported):
    # A child someone else owns (e.g. Nova's vGPU provider) and an
    # operator's trait on one of ours.
    other = str(uuid.uuid4())
    resp = placement_conn.placement.post("/resource_providers", json={
        "uuid": other, "name": f"{reported.host}_pgpu_nova",
        "parent_provider_uuid": reported.root}, microversion=MV)
    assert resp.status_code == 200
    rp_uuid = reported.doc["devices"][2]["regions"][0]["rp_uuid"]
    _put(placement_conn, "/traits/CUSTOM_RACK_A", None)
    gen = _get(placement_conn, f"/resource_providers/{rp_uuid}")["generation"]
    _put(placement_conn, f"/resource_providers/{rp_uuid}/traits", {
        "resource_provider_generation": gen,
        "traits": sorted(_traits(placement_conn, rp_uuid)
                         | {"CUSTOM_RACK_A"})})
    result = reporter.report(reported.client, reported.doc)
    assert result.writes == 0
    assert other in _children(placement_conn, reported.root)
    # Seen once, the foreign child is not read again while unchanged.
    assert reporter.report(reported.client, reported.doc).reads == 2


def test_device_moved_to_another_host_is_reparented(placement_conn,
                                                    reported):
    new_root, new_host = fx.create_compute_node(placement_conn)
    doc = copy.deepcopy(reported.doc)
    doc["host"] = new_host
    result = reporter.report(reported.client, doc)
    assert len(result.updated) == 4
    children = _children(placement_conn, new_root)
    assert len(children) == 4
    assert all(rp["name"].startswith(new_host) for rp in children.values())


def test_missing_compute_node_is_a_clear_error(placement_conn):
    doc = documents.document(f"nowhere-{uuid.uuid4().hex}.example.org")
    client = placement_client.Client(placement_conn)
    with pytest.raises(accel_exception.ParentNotFound,
                       match="no compute-node resource provider named"
                       ) as err:
        reporter.report(client, doc)
    assert client.writes == 0
    # One line naming the name tried and how to set the mapping.
    message = str(err.value)
    assert "\n" not in message
    assert f"name tried: {doc['host']!r}" in message
    assert "compute_host_source" in message
    assert "'{name}.example.org'" in message


def test_custom_resource_class_is_created(placement_conn, compute_node):
    root_uuid, host = compute_node
    node = str(uuid.uuid4())
    device = documents.fpga(node, 0)
    device["type"] = "QAT"
    device["regions"][0]["resource_class"] = "CUSTOM_QAT"
    doc = documents.document(host, node, [device])
    reporter.report(placement_client.Client(placement_conn), doc)
    rp_uuid = device["regions"][0]["rp_uuid"]
    assert "CUSTOM_QAT" in _inventory(placement_conn, rp_uuid)["inventories"]
    assert "CUSTOM_PCI_INTEL" in _traits(placement_conn, rp_uuid)


def _conf(url=None):
    conf = cfg.ConfigOpts()
    accel_conf.register_opts(conf)
    conf([])
    if url:
        embedded_placement.apply_client_conf(conf, "placement", url)
    return conf


def test_report_after_refresh_is_a_noop_without_placement():
    node = types.SimpleNamespace(uuid=str(uuid.uuid4()))
    assert reporter.report_after_refresh(
        node, documents.document("h"), conf=_conf()) is None


def test_report_after_refresh_uses_placement_group(placement_server,
                                                   placement_conn,
                                                   compute_node):
    root_uuid, host = compute_node
    conf = _conf(placement_server.url)
    doc = documents.document(host)
    node = types.SimpleNamespace(uuid=doc["node_uuid"])
    result = reporter.report_after_refresh(node, doc, conf=conf)
    assert len(result.created) == 4
    assert len(_children(placement_conn, root_uuid)) == 4


def test_report_nodes_reports_each_and_isolates_failures(placement_server,
                                                         placement_conn,
                                                         compute_node):
    root_uuid, host = compute_node
    good = documents.document(host)
    bad = documents.document(f"missing-{uuid.uuid4().hex}")
    nodes = [types.SimpleNamespace(uuid="a", extra={"accelerators": bad}),
             types.SimpleNamespace(uuid="b", extra={"accelerators": good}),
             types.SimpleNamespace(uuid="c", extra={})]
    outcome = reporter.report_nodes(nodes, conf=_conf(placement_server.url))
    assert isinstance(outcome["a"], accel_exception.ParentNotFound)
    assert len(outcome["b"].created) == 4
    assert "c" not in outcome


def test_flat_host_is_not_reported_twice(placement_conn, compute_node):
    root_uuid, host = compute_node
    _put(placement_conn, f"/resource_providers/{root_uuid}/inventories", {
        "resource_provider_generation": 0,
        "inventories": {"VCPU": {"total": 4}, "FPGA": {"total": 4}}})
    client = placement_client.Client(placement_conn)
    with pytest.raises(accel_exception.FlatHost, match="migrate-flat --host"):
        reporter.report(client, documents.document(host))
    assert client.writes == 0


def test_name_taken_by_a_foreign_provider_is_waited_for(placement_conn,
                                                        compute_node):
    # A provider without OWNER_CYBORG (an operator's) has the name.
    root_uuid, host = compute_node
    doc = documents.document(host)
    device = doc["devices"][0]
    resp = placement_conn.placement.post("/resource_providers", json={
        "name": f"{host}_{device['pci_address']}"}, microversion=MV)
    assert resp.status_code == 200, resp.text
    result = reporter.report(placement_client.Client(placement_conn), doc)
    rp_uuid = device["regions"][0]["rp_uuid"]
    assert result.held == [rp_uuid] and len(result.created) == 4
    assert _children(placement_conn, root_uuid)[rp_uuid]["name"] == (
        tree.held_name(f"{host}_{device['pci_address']}"))
