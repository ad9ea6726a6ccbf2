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

"""Flat -> nested migration against a real Placement seeded flat."""

import json
import types
import uuid

import pytest

from accel_common import exception as common_exception
from accel_common.placement import client as placement_client
from accel_tools.embedded import placement as embedded_placement
from cyborg_lite.cmd import manage as cyborg_manage
from ironic_accel import exception as accel_exception
from ironic_accel.cmd import manage
from ironic_accel.placement import migrate_flat
from tests.functional import documents

MV = "1.39"
FLAT_TRAITS = ["COMPUTE_ACCELERATORS", "CUSTOM_FPGA_INTEL",
               "CUSTOM_FPGA_INTEL_PAC_ARRIA10", "OWNER_CYBORG",
               "CUSTOM_FPGA_FUNCTION_ID_INTEL_GZIP"]


def _call(conn, method, url, body=None, ok=(200, 201, 204)):
    kwargs = {"microversion": MV}
    if body is not None:
        kwargs["json"] = body
    resp = getattr(conn.placement, method)(url, **kwargs)
    assert resp.status_code in ok, resp.text
    return resp.json() if resp.content else None


def _allocate(conn, resources_by_rp):
    consumer = str(uuid.uuid4())
    _call(conn, "put", f"/allocations/{consumer}", {
        "allocations": {rp: {"resources": r}
                        for rp, r in resources_by_rp.items()},
        "project_id": "p", "user_id": "u", "consumer_generation": None,
        "consumer_type": "INSTANCE"})
    return consumer


def _allocations(conn, consumer):
    body = _call(conn, "get", f"/allocations/{consumer}")
    return {rp: a["resources"] for rp, a in body["allocations"].items()}


@pytest.fixture
def flat_host(placement_conn, compute_node):
    """A compute node in the legacy flat shape: VCPU plus 4 FPGA, 2 PGPU."""
    root, host = compute_node
    node = str(uuid.uuid4())
    doc = documents.document(host, node)
    inventories = {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 4096},
                   "FPGA": {"total": 4, "max_unit": 4},
                   "PGPU": {"total": 2, "max_unit": 2}}
    gen = _call(placement_conn, "put",
                f"/resource_providers/{root}/inventories",
                {"resource_provider_generation": 0,
                 "inventories": inventories})["resource_provider_generation"]
    for trait in FLAT_TRAITS:
        if trait.startswith("CUSTOM_"):
            _call(placement_conn, "put", f"/traits/{trait}")
    _call(placement_conn, "put", f"/resource_providers/{root}/traits",
          {"resource_provider_generation": gen, "traits": FLAT_TRAITS})
    return types.SimpleNamespace(root=root, host=host, doc=doc,
                                 rps=[d["regions"][0]["rp_uuid"]
                                      for d in doc["devices"]])


def test_dry_run_changes_nothing(placement_conn, flat_host):
    client = placement_client.Client(placement_conn)
    result, lines = migrate_flat.migrate(client, flat_host.doc)
    assert client.writes == 0
    text = "\n".join(lines)
    assert "move inventory FPGA total 4" in text
    assert "Dry run" in text
    assert len(result.create) == 4
    inv = _call(placement_conn, "get",
                f"/resource_providers/{flat_host.root}/inventories")
    assert "FPGA" in inv["inventories"]


def test_apply_moves_inventory_and_allocations(placement_conn, flat_host):
    root = flat_host.root
    vm1 = _allocate(placement_conn, {root: {"VCPU": 2, "FPGA": 1}})
    vm2 = _allocate(placement_conn, {root: {"VCPU": 1, "FPGA": 2,
                                            "PGPU": 1}})
    plain = _allocate(placement_conn, {root: {"VCPU": 1}})
    client = placement_client.Client(placement_conn)

    migrate_flat.migrate(client, flat_host.doc, do_apply=True)

    assert client.calls["POST"] >= 1
    assert ("POST", "/reshaper") in client.write_log
    root_inv = _call(placement_conn, "get",
                     f"/resource_providers/{root}/inventories")["inventories"]
    assert set(root_inv) == {"VCPU", "MEMORY_MB"}
    fpga0, fpga1, gpu0, gpu1 = flat_host.rps
    a1, a2 = _allocations(placement_conn, vm1), _allocations(placement_conn,
                                                             vm2)
    assert a1[root] == {"VCPU": 2}
    assert a2[root] == {"VCPU": 1}
    # Each group's amount landed whole on one region of the right class.
    (rp1,) = [rp for rp in a1 if rp != root]
    assert rp1 in (fpga0, fpga1) and a1[rp1] == {"FPGA": 1}
    fpga_rp2 = [rp for rp in a2 if a2[rp].get("FPGA")]
    assert len(fpga_rp2) == 1 and a2[fpga_rp2[0]] == {"FPGA": 2}
    assert fpga_rp2[0] != rp1
    assert [rp for rp in a2 if a2[rp].get("PGPU")][0] in (gpu0, gpu1)
    assert _allocations(placement_conn, plain) == {root: {"VCPU": 1}}

    traits = set(_call(placement_conn, "get",
                       f"/resource_providers/{root}/traits")["traits"])
    assert traits == {"COMPUTE_ACCELERATORS"}
    nested = set(_call(placement_conn, "get",
                       f"/resource_providers/{fpga0}/traits")["traits"])
    assert "CUSTOM_FPGA_INTEL_PAC_ARRIA10" in nested


def test_apply_twice_is_safe(placement_conn, flat_host):
    _allocate(placement_conn, {flat_host.root: {"VCPU": 1, "FPGA": 1}})
    migrate_flat.migrate(placement_client.Client(placement_conn),
                         flat_host.doc, do_apply=True)
    client = placement_client.Client(placement_conn)
    result, lines = migrate_flat.migrate(client, flat_host.doc,
                                         do_apply=True)
    assert result.nothing_to_do
    assert client.writes == 0
    assert "nothing to change" in lines[0]


def test_apply_without_allocations(placement_conn, flat_host):
    client = placement_client.Client(placement_conn)
    migrate_flat.migrate(client, flat_host.doc, do_apply=True)
    for rp in flat_host.rps[:2]:
        inv = _call(placement_conn, "get",
                    f"/resource_providers/{rp}/inventories")["inventories"]
        assert inv["FPGA"]["total"] == 2


def test_resume_after_providers_were_created(placement_conn, flat_host):
    """A run that stopped after creating providers is finished by the next."""
    vm = _allocate(placement_conn, {flat_host.root: {"FPGA": 1}})
    client = placement_client.Client(placement_conn)
    result = migrate_flat.plan(client, flat_host.doc)
    for provider in result.create:
        client.create_provider(provider.uuid, provider.name, flat_host.root)
    migrate_flat.migrate(client, flat_host.doc, do_apply=True)
    alloc = _allocations(placement_conn, vm)
    assert flat_host.root not in alloc
    assert list(alloc.values()) == [{"FPGA": 1}]


def test_mismatched_flat_inventory_is_refused(placement_conn, flat_host):
    doc = dict(flat_host.doc, devices=flat_host.doc["devices"][1:])
    client = placement_client.Client(placement_conn)
    with pytest.raises(accel_exception.MigrationRefused,
                       match="FPGA total 4 but the inventory document has "
                             "1 region"):
        migrate_flat.migrate(client, doc, do_apply=True)
    assert client.writes == 0


def test_cli_dry_run_and_apply(placement_server, placement_conn, flat_host,
                               tmp_path, capsys):
    path = tmp_path / "inventory.json"
    path.write_text(json.dumps(flat_host.doc))
    conf = manage.new_conf()
    conf([])
    embedded_placement.apply_client_conf(conf, "placement",
                                         placement_server.url)
    args = types.SimpleNamespace(host=flat_host.host, inventory=str(path),
                                 apply=False)
    assert manage.migrate_flat_command(conf, args) == 0
    assert "Dry run" in capsys.readouterr().out
    args.apply = True
    assert manage.migrate_flat_command(conf, args) == 0
    assert "migrated to the nested model" in capsys.readouterr().out
    assert manage.migrate_flat_command(conf, args) == 0
    assert "nothing to change" in capsys.readouterr().out


@pytest.fixture
def legacy_named_host(placement_conn, compute_node):
    """Flat inventory under early Cyborg's CUSTOM_ACCELERATOR_FPGA name."""
    root, host = compute_node
    node = str(uuid.uuid4())
    doc = documents.document(host, node, [documents.fpga(node, 0),
                                          documents.fpga(node, 1)])
    _call(placement_conn, "put", "/resource_classes/CUSTOM_ACCELERATOR_FPGA")
    _call(placement_conn, "put", f"/resource_providers/{root}/inventories",
          {"resource_provider_generation": 0, "inventories": {
              "VCPU": {"total": 4},
              "CUSTOM_ACCELERATOR_FPGA": {"total": 4, "max_unit": 4}}})
    return types.SimpleNamespace(root=root, host=host, doc=doc)


def test_unmatched_accelerator_class_is_refused(placement_conn,
                                                legacy_named_host):
    client = placement_client.Client(placement_conn)
    with pytest.raises(accel_exception.MigrationRefused,
                       match="--map-resource-class CUSTOM_ACCELERATOR_FPGA"):
        migrate_flat.migrate(client, legacy_named_host.doc, do_apply=True)
    assert client.writes == 0


def test_renamed_class_moves_allocations_to_document_class(
        placement_conn, legacy_named_host):
    root = legacy_named_host.root
    vm = _allocate(placement_conn, {root: {"VCPU": 1,
                                           "CUSTOM_ACCELERATOR_FPGA": 1}})
    client = placement_client.Client(placement_conn)
    _, lines = migrate_flat.migrate(
        client, legacy_named_host.doc, do_apply=True,
        rc_map={"CUSTOM_ACCELERATOR_FPGA": "FPGA"})
    assert any("(as FPGA)" in line for line in lines)
    alloc = _allocations(placement_conn, vm)
    assert alloc.pop(root) == {"VCPU": 1}
    assert list(alloc.values()) == [{"FPGA": 1}]
    root_inv = _call(placement_conn, "get",
                     f"/resource_providers/{root}/inventories")["inventories"]
    assert set(root_inv) == {"VCPU"}


def test_consumer_changed_after_planning_fails_cleanly_and_rerun_works(
        placement_conn, flat_host):
    root = flat_host.root
    vm = _allocate(placement_conn, {root: {"VCPU": 1, "FPGA": 1}})
    client = placement_client.Client(placement_conn)
    result = migrate_flat.plan(client, flat_host.doc)
    # Nova resizes the instance between planning and applying.
    body = _call(placement_conn, "get", f"/allocations/{vm}")
    _call(placement_conn, "put", f"/allocations/{vm}", {
        "allocations": {root: {"resources": {"VCPU": 2, "FPGA": 1}}},
        "project_id": body["project_id"], "user_id": body["user_id"],
        "consumer_generation": body["consumer_generation"],
        "consumer_type": "INSTANCE"})
    with pytest.raises(common_exception.PlacementError) as raised:
        migrate_flat.apply(client, result)
    assert raised.value.status == 409
    # The reshaper is atomic: nothing moved, the allocation is intact.
    assert _allocations(placement_conn, vm) == {root: {"VCPU": 2, "FPGA": 1}}

    migrate_flat.migrate(placement_client.Client(placement_conn),
                         flat_host.doc, do_apply=True)
    alloc = _allocations(placement_conn, vm)
    assert alloc.pop(root) == {"VCPU": 2}
    assert list(alloc.values()) == [{"FPGA": 1}]


def test_cli_refusal_exits_1_with_the_reason(placement_server,
                                             legacy_named_host, tmp_path,
                                             capsys):
    path = tmp_path / "inventory.json"
    path.write_text(json.dumps(legacy_named_host.doc))
    conf = manage.new_conf()
    conf([])
    embedded_placement.apply_client_conf(conf, "placement",
                                         placement_server.url)
    args = types.SimpleNamespace(host=legacy_named_host.host,
                                 inventory=str(path), apply=True,
                                 map_resource_class=None)
    assert manage.migrate_flat_command(conf, args) == 1
    assert "Refused: " in capsys.readouterr().err
    args.map_resource_class = ["CUSTOM_ACCELERATOR_FPGA=FPGA"]
    assert manage.migrate_flat_command(conf, args) == 0


def test_ironic_accel_manage_reads_placement_from_its_config_file(
        placement_server, placement_conn, flat_host, tmp_path, capsys):
    path = tmp_path / "inventory.json"
    path.write_text(json.dumps(flat_host.doc))
    config = tmp_path / "ironic.conf"
    config.write_text("[placement]\nauth_type = admin_token\n"
                      f"endpoint = {placement_server.url}\ntoken = admin\n")
    with pytest.raises(SystemExit) as exit_info:
        manage.main(["--config-file", str(config), "placement",
                     "migrate-flat", "--host", flat_host.host,
                     "--inventory", str(path)])
    assert exit_info.value.code == 0
    assert "Dry run" in capsys.readouterr().out
    root = _call(placement_conn, "get",
                 f"/resource_providers/{flat_host.root}/inventories")
    assert "FPGA" in root["inventories"], "a dry run changed Placement"


def test_cyborg_lite_manage_says_where_migrate_flat_went(tmp_path, capsys):
    config = tmp_path / "cyborg_lite.conf"
    config.write_text("")
    with pytest.raises(SystemExit) as exit_info:
        cyborg_manage.main(["--config-file", str(config), "placement",
                            "migrate-flat", "--host", "h1", "--apply"])
    assert exit_info.value.code == 2
    assert ("moved to 'ironic-accel-manage placement migrate-flat'"
            in capsys.readouterr().err)
