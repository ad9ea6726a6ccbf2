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

"""Every configuration file the docs show parses with oslo.config and names
only options that exist: this project's, or those of the service the file
configures (Ironic's from the installed package; Nova's as Nova builds
them). Every unit file runs a command that exists."""

import configparser
import copy
import pathlib
import re

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg
from oslo_privsep import priv_context
from oslo_rootwrap import wrapper as rootwrap
import pytest
import stevedore

from cyborg_lite.agent import privsep
from cyborg_lite.db import migration
from tests.unit.doc import blocks

ROOT = blocks.ROOT

#: the oslo.config namespaces of each kind of file, by the file's name.
CYBORG_LITE = tuple(
    line.split("=", 1)[1].strip()
    for line in (ROOT / "etc" / "cyborg_lite" /
                 "cyborg-lite-config-generator.conf").read_text().splitlines()
    if line.startswith("namespace"))
IRONIC = ("ironic", "ironic_accel", "keystonemiddleware.auth_token",
          "oslo.log", "oslo.messaging")
DRA_PLUGIN = tuple(
    line.split("=", 1)[1].strip()
    for line in (ROOT / "etc" / "cyborg_lite_dra" /
                 "cyborg-lite-dra-config-generator.conf").read_text()
    .splitlines()
    if line.startswith("namespace"))

CONFIG_BLOCKS = [block for block in blocks.all_blocks()
                 if blocks.SECTION.search(block.text)]


def _nova_options():
    """Nova's ``[cyborg]`` and ``[service_user]`` options.

    Nova is not installed here. Both groups are built from keystoneauth, as
    Nova builds them: ``nova/conf/cyborg.py`` registers the session and
    adapter options (``confutils.register_ksa_opts(..., include_auth=False)``,
    without the version options), ``nova/conf/service_token.py`` adds
    ``send_service_user_token`` to the session and auth options.
    """
    adapter = [opt for opt in ks_loading.get_adapter_conf_options(
        include_deprecated=False)
        if opt.dest not in ("version", "min_version", "max_version")]
    session = ks_loading.get_session_conf_options()
    return [
        ("cyborg", session + adapter),
        ("service_user", [cfg.BoolOpt("send_service_user_token")] + session
         + ks_loading.get_auth_common_conf_options()),
    ]


def _namespace_options(namespaces):
    manager = stevedore.named.NamedExtensionManager(
        "oslo.config.opts", names=list(namespaces), invoke_on_load=True,
        on_load_failure_callback=_raise)
    return [pair for extension in manager for pair in extension.obj]


def _raise(manager, entry_point, error):
    raise error


# oslo.rootwrap's own file: what oslo_rootwrap.wrapper.RootwrapConfig reads.
ROOTWRAP = [("DEFAULT", [
    cfg.ListOpt("filters_path"), cfg.ListOpt("exec_dirs"),
    cfg.StrOpt("syslog_log_facility"), cfg.StrOpt("syslog_log_level"),
    cfg.BoolOpt("use_syslog"), cfg.BoolOpt("use_syslog_rfc_format"),
    cfg.IntOpt("daemon_timeout"), cfg.IntOpt("rlimit_nofile")])]


def _options_for(caption):
    """(group, options) pairs of the service the file named configures."""
    name = pathlib.PurePosixPath(caption).name
    parent = pathlib.PurePosixPath(caption).parent.name
    if name == "cyborg_lite.conf":
        # NOTE(docs): oslo.privsep registers the agent context's section
        # when the context starts, not through a namespace.
        return _namespace_options(CYBORG_LITE) + [
            (privsep.CFG_SECTION, priv_context.OPTS)]
    if name == "rootwrap.conf":
        return ROOTWRAP
    if name == "ironic.conf" or parent == "ironic.conf.d":
        return _namespace_options(IRONIC)
    if name == "nova.conf":
        return _nova_options()
    if name == "cyborg-lite-dra.conf":
        return _namespace_options(DRA_PLUGIN)
    if name == "logging.conf":
        # NOTE(tests): Python's logging.config file format, not oslo's.
        return None
    if parent in ("neutron", "ml2"):
        # NOTE(tests): Neutron is not installed beside the project (its
        # own venv runs the real-Neutron tests, which run these settings):
        # its files are checked for syntax only.
        return None
    if name == "placement.conf":
        # NOTE(tests): openstack-placement is a test requirement (the real
        # Placement of the functional tests), its options come with it.
        return _namespace_options(("placement.conf",))
    raise AssertionError(f"no option set known for {caption!r}")


def _register(conf, pairs):
    for group, options in pairs:
        group = getattr(group, "name", group) or "DEFAULT"
        for option in options:
            if option.required:
                # NOTE(docs): a block shows some sections, not a whole
                # deployment: what it leaves out is not this test's concern.
                option = copy.copy(option)
                option.required = False
            try:
                conf.register_opt(option, group=None if group == "DEFAULT"
                                  else group)
            except cfg.DuplicateOptError:
                # NOTE(docs): two namespaces may both list one option
                # (a client group); the first one counts.
                pass


def _sections(path):
    """{section: [option names]} as oslo.config's own parser reads it."""
    sections = {}
    cfg.ConfigParser(str(path), sections).parse()
    return {name: list(values) for name, values in sections.items()}


def _value(conf, group, name):
    return conf[name] if group == "DEFAULT" else conf[group][name]


def test_config_blocks_are_found():
    captions = {block.caption for block in CONFIG_BLOCKS}
    assert "/etc/cyborg_lite/cyborg_lite.conf" in captions
    assert "/etc/nova/nova.conf" in captions
    assert any("ironic.conf" in caption for caption in captions)


@pytest.mark.parametrize("block", CONFIG_BLOCKS,
                         ids=[block.where for block in CONFIG_BLOCKS])
def test_config_block_says_which_file_it_is(block):
    assert block.language == "ini" and block.caption, (
        f"{block.where}: a configuration block must be '.. code-block:: "
        f"ini' with a ':caption:' naming the file")


OSLO_BLOCKS = [block for block in CONFIG_BLOCKS
               if not block.caption.endswith(".service")]


@pytest.mark.parametrize("block", OSLO_BLOCKS,
                         ids=[block.where for block in OSLO_BLOCKS])
def test_config_block_parses_and_names_existing_options(block, tmp_path):
    path = tmp_path / pathlib.PurePosixPath(block.caption).name
    path.write_text(block.text)
    if path.suffix == ".filters":
        # An oslo.rootwrap filter file: every line a filter it loads,
        # beside those oslo.rootwrap adds to any set.
        names = _sections(path)["Filters"]
        (tmp_path / "none").mkdir()
        added = len(rootwrap.load_filters([str(tmp_path / "none")]))
        loaded = rootwrap.load_filters([str(tmp_path)])
        assert len(loaded) - added == len(names), f"{block.where}: {names}"
        return
    conf = cfg.ConfigOpts()
    known = _options_for(block.caption)
    sections = _sections(path)   # raises on what oslo.config cannot parse
    if known is None:
        inline = [f"[{group}] {name}" for group, names in sections.items()
                  for name in names
                  if "#" in _first_value(path, group, name)]
        assert not inline, (f"{block.where}: oslo.config reads a '#' after "
                            f"a value as part of the value: {inline}")
        return
    _register(conf, known)
    # keystoneauth registers an auth plugin's options (username, ...) when
    # it loads the plugin a group's auth_type names.
    for group, names in sections.items():
        if "auth_type" in names and group != "DEFAULT":
            plugin = _first_value(path, group, "auth_type")
            _register(conf, [(group, ks_loading.get_auth_plugin_conf_options(
                plugin))])
    conf(["--config-file", str(path)], project="docs",
         default_config_files=[], default_config_dirs=[])

    unknown = [f"[{group}] {name}" for group, names in sections.items()
               for name in names
               if not _registered(conf, group, name)]
    assert not unknown, f"{block.where}: no such option: {unknown}"
    for group, names in sections.items():
        for name in names:
            _value(conf, group, name)   # raises on a value of a wrong type


def _first_value(path, group, name):
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.read(path)
    return parser[group][name].strip()


def _registered(conf, group, name):
    if group == "DEFAULT":
        return name in conf
    return group in conf and name in conf[group]


UNIT_BLOCKS = [block for block in CONFIG_BLOCKS
               if block.caption.endswith(".service")]


def _console_scripts():
    setup_cfg = configparser.ConfigParser()
    setup_cfg.read(ROOT / "setup.cfg")
    return {line.split("=")[0].strip() for line in
            setup_cfg["entry_points"]["console_scripts"].splitlines()
            if line.strip()}


@pytest.mark.parametrize("block", UNIT_BLOCKS,
                         ids=[block.where for block in UNIT_BLOCKS])
def test_unit_block_runs_a_command_that_exists(block):
    unit = configparser.ConfigParser(interpolation=None, strict=False)
    unit.optionxform = str
    unit.read_string(block.text)
    assert {"Unit", "Service", "Install"} <= set(unit.sections())
    command = unit["Service"]["ExecStart"].split()
    program = pathlib.PurePosixPath(command[0]).name
    assert program in _console_scripts() | {"gunicorn"}, block.where
    if program == "gunicorn":
        module, _, attribute = command[-1].partition(":")
        assert (module, attribute) == ("cyborg_lite.wsgi", "application")
        assert "CYBORG_LITE_CONFIG=" in unit["Service"]["Environment"]
    else:
        assert "--config-file" in command


def test_schema_revisions_shown_are_the_code_s():
    """The revisions the health page and db sync examples show are this
    code's head (and the one before it)."""
    head = migration.head()
    previous = sorted(migration.known())[-2]
    text = "\n".join(path.read_text(encoding="utf-8")
                     for path in sorted(blocks.DOCS.rglob("*.rst")))
    needs = re.findall(r"this code needs (\d{4})", text)
    newest = re.findall(r"newest revision\s+\((\d{4})\)", text)
    shown = re.findall(r"schema revision: (\d{4})", text)
    assert needs and newest and shown
    assert set(needs + newest + shown) == {head}
    assert set(re.findall(r"migrated from (\d{4})", text)) == {previous}

