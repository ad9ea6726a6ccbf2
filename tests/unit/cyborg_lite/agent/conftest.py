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

"""Shared helpers of the agent unit tests: configuration, fake sysfs trees
and fake vendor tools that replay recorded output."""

import json
import os
import shutil
import stat
import sys
import textwrap

from oslo_config import cfg
from oslo_privsep import priv_context
import pytest

from cyborg_lite.agent import privsep
from cyborg_lite.conf import agent as agent_conf
from cyborg_lite.conf import clients as clients_conf

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def make_conf(**agent_overrides):
    """A fresh ConfigOpts with cyborg_lite's agent and client options."""
    conf = cfg.ConfigOpts()
    agent_conf.register_opts(conf)
    clients_conf.register_opts(conf)
    conf([], project="cyborg_lite")
    for key, value in agent_overrides.items():
        conf.set_override(key, value, group="agent")
    return conf


@pytest.fixture
def sim_conf(tmp_path):
    """Agent configuration with the sim driver in a fresh state dir."""
    return make_conf(enabled_drivers=["sim"],
                     sim_state_dir=str(tmp_path / "sim"),
                     image_catalog_dir=str(tmp_path / "catalog"),
                     sim_program_seconds=0, host="agent-test-host")


def copy_sysfs(name, tmp_path):
    """A writable copy of ``data/<name>`` (symlinks kept); its root."""
    root = tmp_path / name
    shutil.copytree(os.path.join(DATA, name), root, symlinks=True)
    return str(root)


def fake_tool(tmp_path, name, stdout_file=None, stderr_file=None,
              exit_code=0, action=""):
    """Write an executable stand-in for a vendor tool.

    It appends its arguments (a JSON list per line) to ``<name>.calls``,
    prints the recorded ``stdout_file``/``stderr_file`` from data/tools,
    runs ``action`` (Python, with ``argv`` bound) and exits ``exit_code``.

    :returns: (path of the tool, path of the calls log).
    """
    calls = tmp_path / f"{name}.calls"
    path = tmp_path / name

    def recorded(file_name):
        if not file_name:
            return ""
        with open(os.path.join(DATA, "tools", file_name)) as handle:
            return handle.read()

    script = textwrap.dedent(f"""\
        #!{sys.executable}
        import json, sys
        argv = sys.argv[1:]
        with open({str(calls)!r}, "a") as log:
            log.write(json.dumps(argv) + "\\n")
        sys.stdout.write({recorded(stdout_file)!r})
        sys.stderr.write({recorded(stderr_file)!r})
        """) + textwrap.dedent(action) + f"\nsys.exit({exit_code})\n"
    path.write_text(script)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path), calls


def read_calls(calls):
    """The argument lists a fake tool was called with."""
    if not os.path.exists(calls):
        return []
    with open(calls) as handle:
        return [json.loads(line) for line in handle]


@pytest.fixture(scope="session", autouse=True)
def privsep_daemon():
    """The agent's privsep daemon, forked from the test process and keeping
    no capability: the privileged functions really run in it (their
    arguments and answers cross its channel), and no test needs root.

    NOTE(agent): with capabilities=[] the daemon keeps the test user's own
    rights, which is all a fake sysfs tree in tmp_path needs.
    """
    cfg.CONF.set_override("capabilities", [], group=privsep.CFG_SECTION)
    privsep.sys_admin_pctxt.start(priv_context.Method.FORK)
    yield privsep.sys_admin_pctxt
    privsep.sys_admin_pctxt.stop()
    cfg.CONF.clear_override("capabilities", group=privsep.CFG_SECTION)
