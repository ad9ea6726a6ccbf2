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

"""The cyborg_lite role's privsep setup for the agent: what it writes is
what sudo, oslo.rootwrap and oslo.privsep read: the agent's own command
for its privsep daemon passes the rootwrap filter and runs the
virtualenv's privsep-helper. (oslo.rootwrap itself also admits any other
privsep-helper command; doc/source/admin/security.rst says what that
means.)"""

import configparser
import getpass
import json
import shutil
import subprocess
import sys

from oslo_rootwrap import filters as rootwrap_filters
from oslo_rootwrap import wrapper
import pytest

from tests.functional.playbooks import ansible_runner

# The command the agent runs, built by oslo.privsep itself from the
# configuration the role wrote.
_PROBE = (
    "import json, sys\n"
    "from oslo_config import cfg\n"
    "from cyborg_lite.agent import privsep\n"
    "conf = cfg.ConfigOpts()\n"
    "conf(['--config-file', sys.argv[1]])\n"
    "privsep.setup(conf)\n"
    "print(json.dumps(privsep.sys_admin_pctxt.helper_command(\n"
    "    '/tmp/tmpk2l9x0/privsep.sock')))\n")


@pytest.fixture(scope="module")
def role_output(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("privsep-role")
    user = getpass.getuser()
    host = {"ansible_connection": "local", "ansible_become": False,
            "ansible_python_interpreter": sys.executable,
            "cyborg_lite_install": False, "cyborg_lite_create_user": False,
            "cyborg_lite_user": user, "cyborg_lite_group": user,
            "cyborg_lite_privsep_owner": user,
            "cyborg_lite_manage_services": False,
            "cyborg_lite_virtualenv": sys.prefix,
            "cyborg_lite_config_dir": str(tmp_path / "etc"),
            "cyborg_lite_state_dir": str(tmp_path / "state"),
            "cyborg_lite_systemd_dir": str(tmp_path),
            "cyborg_lite_sudoers_dir": str(tmp_path),
            "cyborg_lite_sudoers_validate": False,
            "cyborg_lite_install_sudo": False,
            "cyborg_lite_agent_host": "compute-0.test",
            "cyborg_lite_agent_drivers": ["sim"]}
    inventory = ansible_runner.write_inventory(tmp_path / "hosts.yml", {
        "cyborg_lite_agent": {"hosts": {"compute-0": host}}})
    first = ansible_runner.run_playbook("cyborg-lite.yml", inventory,
                                        tmp_path)
    second = ansible_runner.run_playbook("cyborg-lite.yml", inventory,
                                         tmp_path)
    return tmp_path, user, first, second


def _agent_command(tmp_path):
    probe = subprocess.run(
        [sys.executable, "-c", _PROBE, str(tmp_path / "etc" /
                                          "cyborg_lite.conf")],
        capture_output=True, text=True, check=True)
    return json.loads(probe.stdout.strip().splitlines()[-1])


def test_the_role_runs_the_agent_as_its_user(role_output):
    tmp_path, user, first, second = role_output

    assert first.returncode == 0, first.output
    assert second.returncode == 0 and second.changed() == 0, second.output
    unit = configparser.ConfigParser(interpolation=None, strict=False)
    unit.read(tmp_path / "cyborg-lite-agent.service")
    assert unit["Service"]["User"] == user
    if shutil.which("sudo") is None:
        # Told not to install it (cyborg_lite_install_sudo), the role says
        # what the agent lacks.
        assert ("sudo is not installed and cyborg_lite_install_sudo is "
                "false: cyborg-lite-agent cannot start its privsep daemon"
                ) in " ".join(first.output.split()), first.output
    sudoers = (tmp_path / "cyborg-lite-agent").read_text()
    assert (f"{user} ALL = (root) NOPASSWD: {sys.prefix}/bin/oslo-rootwrap "
            f"{tmp_path}/etc/rootwrap.conf *") in sudoers


def test_the_agents_privsep_command_passes_the_rootwrap_filter(role_output):
    tmp_path, _user, _first, _second = role_output
    command = _agent_command(tmp_path)

    assert command[:3] == ["sudo", f"{sys.prefix}/bin/oslo-rootwrap",
                           f"{tmp_path}/etc/rootwrap.conf"]
    rootwrap_conf = configparser.RawConfigParser()
    rootwrap_conf.read(command[2])
    config = wrapper.RootwrapConfig(rootwrap_conf)
    filters = wrapper.load_filters(config.filters_path)

    matched = wrapper.match_filter(filters, command[3:],
                                   exec_dirs=config.exec_dirs)
    assert isinstance(matched, rootwrap_filters.RegExpFilter)
    assert matched.get_command(command[3:], exec_dirs=config.exec_dirs)[
        0] == f"{sys.prefix}/bin/privsep-helper"
