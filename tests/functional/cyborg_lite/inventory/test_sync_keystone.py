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

"""``cyborg-lite-manage inventory sync`` against a real Ironic behind a
real Keystone, with the ``[ironic]`` section and the roles
install/cyborg-lite.rst gives, and the Ironic option install/ironic.rst
gives (both taken from the pages).

The nodes are enrolled as an Ironic operator does, by a system-scoped
administrator, so they belong to no project. With the page's
``system_scope = all`` the sync sees them under Ironic's default policy.
Project-scoped like the page's other sections (``admin`` and ``service``
on the ``service`` project) it sees none: the command says so and exits
:data:`~cyborg_lite.cmd.manage.inventory.NO_NODES`; with the Ironic option
the page names for that case it sees them.
"""

import configparser
import json
import logging
import re
import uuid

import pytest

from accel_tools import standalone
from cyborg_lite import service
from cyborg_lite.cmd import manage
from cyborg_lite.cmd.manage import inventory as inventory_manage
from cyborg_lite.db import engine as db_engine
from cyborg_lite.inventory import ironic as ironic_inventory
from cyborg_lite.inventory import lease as sync_lease
from cyborg_lite.programming import programmer as programmer_mod
from tests.fixtures import ironic as ironic_fixtures
from tests.functional import documents
from tests.unit.doc import blocks

PAGES = blocks.DOCS / "install"

FAKE_INTERFACES = {"boot_interface": "fake", "deploy_interface": "fake",
                   "power_interface": "fake", "management_interface": "fake",
                   "network_interface": "noop"}


def _page_section(page, section, caption=None):
    """``section`` of the first ini block of install/``page`` that has it
    (and ``caption``, when given), as a dict."""
    for block in blocks.blocks(PAGES / page):
        if block.language == "ini" and f"[{section}]" in block.text and (
                caption is None or block.caption == caption):
            parser = configparser.ConfigParser(interpolation=None)
            parser.optionxform = str
            parser.read_string(block.text)
            return dict(parser[section])
    raise AssertionError(f"{page} shows no file with [{section}]")


def _ironic_with_a_node(tmp_path_factory, keystone, default_options=None):
    """Ironic behind Keystone and one node an operator enrolled, with its
    document; yields ``(server, host, document)``."""
    workdir = tmp_path_factory.mktemp("keystone-ironic")
    with ironic_fixtures.keystone_ironic(
            str(workdir), keystone, default_options) as server:
        baremetal = ironic_fixtures.keystone_baremetal(keystone, server)
        host = f"ks-{uuid.uuid4().hex[:10]}.example.org"
        node = baremetal.create_node(driver="fake-hardware", name=host,
                                     **FAKE_INTERFACES)
        assert node.owner is None
        document = documents.document(host, node.id, [
            documents.fpga(node.id, 0, handles=2)])
        baremetal.update_node(node, extra={"accelerators": document})
        yield server, host, document


@pytest.fixture(scope="module")
def default_ironic(tmp_path_factory, keystone):
    """Ironic with its default policy."""
    yield from _ironic_with_a_node(tmp_path_factory, keystone)


@pytest.fixture(scope="module")
def elevated_ironic(tmp_path_factory, keystone):
    """Ironic with the ``[DEFAULT]`` options install/ironic.rst gives for
    a project-scoped ``[ironic]``."""
    options = _page_section("ironic.rst", "DEFAULT",
                            "/etc/ironic/ironic.conf.d/60-service-role.conf")
    assert options["rbac_service_role_elevated_access"] == "true"
    yield from _ironic_with_a_node(tmp_path_factory, keystone, options)


@pytest.fixture(scope="module")
def documented_user(keystone):
    """The page's ``cyborg`` user and its roles (the ``openstack role
    add`` lines of install/cyborg-lite.rst); ``(name, password)``."""
    text = (PAGES / "cyborg-lite.rst").read_text()
    assert "role add --project service --user cyborg admin" in text
    assert "role add --project service --user cyborg service" in text
    assert "role add --system all --user cyborg reader" in text
    name = f"cyborg-{uuid.uuid4().hex[:8]}"
    return name, ironic_fixtures.keystone_user(
        keystone, name, project_roles=("admin", "service"),
        system_roles=("reader",))


@pytest.fixture
def db(tmp_path):
    database = db_engine.Database(f"sqlite:///{tmp_path}/cyborg.sqlite")
    database.sync()
    yield database
    database.dispose()


def _ironic_section(keystone, server, user, project_scoped=False):
    """The page's ``[ironic]`` for ``user`` (``(name, password)``); with
    ``project_scoped``, scoped as the page's other sections instead."""
    section = _page_section("cyborg-lite.rst", "ironic")
    assert section.pop("system_scope") == "all"
    assert "project_name" not in section
    if project_scoped:
        placement = _page_section("cyborg-lite.rst", "placement")
        section.update(project_name=placement["project_name"],
                       project_domain_name=placement["project_domain_name"])
    # NOTE(tests): endpoint_override: the session Keystone's catalog has
    # no baremetal endpoint (other tests share it).
    section.update(auth_url=keystone.url, username=user[0],
                   password=user[1], endpoint_override=server.url)
    if not project_scoped:
        section["system_scope"] = "all"
    return "[ironic]\n" + "".join(f"{key} = {value}\n"
                                  for key, value in section.items())


def _config_file(tmp_path, db, ironic_section, host, document):
    """A configuration with ``ironic_section``, the sim agent serving
    ``host`` with ``document``'s devices."""
    sim_inventory = tmp_path / "sim-inventory.json"
    sim_inventory.write_text(json.dumps(document))
    path = tmp_path / "cyborg_lite.conf"
    path.write_text(
        f"[DEFAULT]\nstate_path = {tmp_path}\n"
        f"[database]\nconnection = {db.url}\n"
        "[oslo_policy]\npolicy_file = none.yaml\n"
        + ironic_section +
        f"[agent]\nhost = {host}\nsim_state_dir = {tmp_path / 'sim'}\n"
        f"sim_inventory_file = {sim_inventory}\nrpc_timeout = 5\n"
        "[programming]\nreconcile_on_start = false\n"
        "reconcile_interval = 0\n" + standalone.ini_text())
    return str(path)


def _page_config(tmp_path, db, keystone, ironic, user,
                 project_scoped=False):
    """:func:`_config_file` with the page's ``[ironic]`` for ``user`` on
    ``ironic`` (a fixture's ``(server, host, document)``)."""
    server, host, document = ironic
    return _config_file(
        tmp_path, db, _ironic_section(keystone, server, user,
                                      project_scoped=project_scoped),
        host, document)


def _sync(config_file, *args):
    with pytest.raises(SystemExit) as exit_info:
        manage.main(["--config-file", config_file, "inventory", "sync",
                     *args])
    return exit_info.value.code


def _sync_output(capsys, config_file):
    """Run the sync; ``(exit code, stdout, stderr)``."""
    code = _sync(config_file)
    out, err = capsys.readouterr()
    return code, out, err


def _result(out):
    """The result the command prints last (logs may come before)."""
    start = [m.start() for m in re.finditer(r"^\{$", out, re.M)][-1]
    return json.loads(out[start:])


def test_page_config_sees_the_nodes_under_default_policy(
        db, tmp_path, capsys, keystone, default_ironic, documented_user):
    config = _page_config(tmp_path, db, keystone, default_ironic,
                          documented_user)

    code, out, err = _sync_output(capsys, config)

    assert code == 0, err
    result = _result(out)
    assert [s["host"] for s in result["applied"]] == [default_ironic[1]]
    assert result["nodes"] == 1
    assert "no node at all" not in err


def test_project_scoped_sees_no_node_under_default_policy(
        db, tmp_path, capsys, keystone, default_ironic, documented_user):
    config = _page_config(tmp_path, db, keystone, default_ironic,
                          documented_user, project_scoped=True)

    code, out, err = _sync_output(capsys, config)

    assert code == inventory_manage.NO_NODES == 4, err
    result = _result(out)
    assert result["applied"] == [] and result["nodes"] == 0
    assert "Ironic listed no node at all to the [ironic] user" in err
    assert "system_scope = all" in err
    assert "rbac_service_role_elevated_access" in err
    assert "Traceback" not in err

    # a cloud with no node yet scripts around it; the warning stays
    assert _sync(config, "--allow-no-nodes") == 0
    assert "Ironic listed no node at all" in capsys.readouterr().err


def test_project_scoped_sees_the_nodes_with_the_ironic_option(
        db, tmp_path, capsys, keystone, elevated_ironic, documented_user):
    config = _page_config(tmp_path, db, keystone, elevated_ironic,
                          documented_user, project_scoped=True)

    code, out, err = _sync_output(capsys, config)

    assert code == 0, err
    result = _result(out)
    assert [s["host"] for s in result["applied"]] == [elevated_ironic[1]]
    assert result["nodes"] == 1
    assert "no node at all" not in err


def test_periodic_pass_that_sees_no_node_logs_a_warning(
        db, tmp_path, caplog, keystone, default_ironic, documented_user):
    config = _page_config(tmp_path, db, keystone, default_ironic,
                          documented_user, project_scoped=True)
    conf = service.new_conf()
    conf(["--config-file", config], project="cyborg_lite",
         default_config_files=[])
    programmer = programmer_mod.Programmer(conf, db)
    caplog.set_level(logging.WARNING, logger="cyborg_lite.inventory.ironic")
    try:
        result = sync_lease.InventorySync(conf, db, programmer).run_once()
    finally:
        programmer.stop()

    assert result["nodes"] == 0
    assert [r.getMessage() for r in caplog.records
            if r.name == "cyborg_lite.inventory.ironic"] == [
        f"Inventory sync: {ironic_inventory.NO_NODES}"]
