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

"""cyborg-lite.yml's default install on a fresh host: ``--check`` first,
then a wheel built from this checkout, copied and installed, with true
changed/ok reports."""

import pwd
import subprocess
import sys
import uuid

import pytest

from tests.fixtures import venv
from tests.functional.playbooks import ansible_runner


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The control host's checkout and wheel cache, shared: one commit
    builds once."""
    workdir = tmp_path_factory.mktemp("control")
    return venv.clone_checkout(workdir / "ironic-accel"), workdir / "built"


def _host(tmp_path, built, virtualenv, **host_vars):
    # NOTE(ironic-accel): the plays say become: true; the variable wins over
    # the keyword, and the tests already run with the rights they need.
    return dict({
        "ansible_connection": "local", "ansible_become": False,
        "ansible_python_interpreter": sys.executable,
        "cyborg_lite_manage_services": False,
        "cyborg_lite_virtualenv": str(virtualenv),
        "cyborg_lite_wheel_build_python": sys.executable,
        "cyborg_lite_wheel_dir": str(tmp_path / "wheels"),
        "cyborg_lite_source_dir": str(built[0]),
        "cyborg_lite_wheel_build_dir": str(built[1]),
        "cyborg_lite_config_dir": str(tmp_path / "etc"),
        "cyborg_lite_state_dir": str(tmp_path / "state"),
        "cyborg_lite_systemd_dir": str(tmp_path),
        # NOTE(ironic-accel): the agent's sudoers rule for privsep; this
        # machine has no sudo (test_agent_privsep_role checks the rule).
        "cyborg_lite_sudoers_dir": str(tmp_path),
        "cyborg_lite_sudoers_validate": False,
        "cyborg_lite_auth_strategy": "noauth",
        "cyborg_lite_agent_host": "controller-0.test",
        "cyborg_lite_agent_drivers": ["sim"],
    }, **host_vars)


def _inventory(tmp_path, host):
    return ansible_runner.write_inventory(tmp_path / "hosts.yml", {
        "cyborg_lite_api": {"hosts": {"controller-0": host}},
        "cyborg_lite_agent": {"hosts": {"controller-0": {}}}})


def _user_exists(name):
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def test_check_mode_on_a_fresh_host_creates_nothing(tmp_path, built):
    user = f"cyb{uuid.uuid4().hex[:8]}"
    virtualenv = tmp_path / "venv"
    inventory = _inventory(tmp_path, _host(
        tmp_path, built, virtualenv, cyborg_lite_create_user=True,
        cyborg_lite_user=user, cyborg_lite_group=user))

    run = ansible_runner.run_playbook("cyborg-lite.yml", inventory, tmp_path,
                                      check=True)

    assert run.returncode == 0, run.output
    assert run.recap["controller-0"]["failed"] == 0, run.output
    # What a real run would do shows as changes ...
    assert run.changed() > 0, run.output
    # ... and nothing was done.
    assert not _user_exists(user)
    assert not virtualenv.exists()
    assert not (tmp_path / "etc").exists()
    assert not (tmp_path / "wheels").exists()
    # The wheel was built on the control host (a cache, not a change).
    assert list(built[1].glob("*/ironic_accel-*.whl"))


def test_wheel_install_then_check_reports_ok(tmp_path, built):
    # A fresh virtualenv that has the dependencies but not the project:
    # the role installs the wheel it builds, and only that (no index, no
    # dependencies).
    virtualenv = venv.create(tmp_path / "venv")
    inventory = _inventory(tmp_path, _host(
        tmp_path, built, virtualenv, cyborg_lite_create_user=False,
        cyborg_lite_user="root", cyborg_lite_group="root",
        cyborg_lite_pip_environment={"PIP_NO_DEPS": "1",
                                     "PIP_NO_INDEX": "1"}))

    first = ansible_runner.run_playbook("cyborg-lite.yml", inventory,
                                        tmp_path)
    checked = ansible_runner.run_playbook("cyborg-lite.yml", inventory,
                                          tmp_path, check=True)

    assert first.returncode == 0, first.output
    wheels = sorted(p.name for p in (tmp_path / "wheels").iterdir())
    assert len(wheels) == 1 and wheels[0].startswith("ironic_accel-")
    version = wheels[0].split("-")[1]
    shown = subprocess.run(
        [str(virtualenv / "bin" / "python"), "-m", "pip", "show",
         "ironic-accel"], capture_output=True, text=True, check=True).stdout
    assert f"Version: {version}" in shown
    assert f"Location: {virtualenv}" in shown
    # The schema migration ran and says so; check mode then sees nothing
    # left to do, the package included.
    assert _task_status(first.output, "Create or upgrade the database "
                                      "schema") == "changed", first.output
    assert checked.returncode == 0, checked.output
    assert checked.changed() == 0, checked.output


def _task_status(output, task):
    """The status line (ok/changed/skipping) Ansible printed for ``task``."""
    block = output.split(f"TASK [cyborg_lite : {task}]", 1)[1]
    status = block.splitlines()[1:][0:3]
    return next(line for line in status if line.strip()).split(":", 1)[0]
