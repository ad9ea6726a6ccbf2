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

import grp
import pwd
import re
import subprocess
import sys
import uuid

import pytest

from tests.fixtures import venv
from tests.functional.playbooks import ansible_runner
from tests.unit.doc import blocks


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
        # NOTE(ironic-accel): never install packages on the test machine.
        "cyborg_lite_install_sudo": False,
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
    # The plays' become, for real: root becomes root and then the role's
    # user for db sync (su, which root may use without a password; this
    # machine has no sudo). Neither that user nor the command exists yet.
    inventory = _inventory(tmp_path, _host(
        tmp_path, built, virtualenv, cyborg_lite_create_user=True,
        cyborg_lite_user=user, cyborg_lite_group=user,
        ansible_become=True, ansible_become_method="su"))

    run = ansible_runner.run_playbook("cyborg-lite.yml", inventory, tmp_path,
                                      check=True)

    assert run.returncode == 0, run.output
    assert run.recap["controller-0"]["failed"] == 0, run.output
    assert _task_status(run.output, "Create or upgrade the database "
                                    "schema") == "skipping", run.output
    assert (f"check mode: {virtualenv}/bin/cyborg-lite-manage is not "
            f"installed yet, nor user {user} created") in " ".join(
                run.output.split()), run.output
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


def _uninstall_commands():
    """admin/operations.rst's uninstall commands for cyborg_lite."""
    page = blocks.DOCS / "admin" / "operations.rst"
    found = [block.text for block in blocks.blocks(page)
             if "userdel cyborg" in block.text]
    assert len(found) == 1, found
    return found[0]


def _group_exists(name):
    try:
        grp.getgrnam(name)
    except KeyError:
        return False
    return True


def test_the_uninstall_commands_remove_what_the_role_installed(
        tmp_path, built):
    user = f"cyb{uuid.uuid4().hex[:8]}"
    # The system's places, in this directory: /etc/systemd/system,
    # /etc/sudoers.d, /opt/cyborg-lite, /etc/cyborg_lite,
    # /var/lib/cyborg_lite, /var/log/cyborg_lite, /var/cache/ironic-accel.
    root = tmp_path / "host"
    places = {"/etc/systemd/system": root / "systemd",
              "/etc/sudoers.d": root / "sudoers.d",
              "/opt/cyborg-lite": root / "opt-cyborg-lite",
              "/etc/cyborg_lite": root / "etc-cyborg_lite",
              "/var/lib/cyborg_lite": root / "lib-cyborg_lite",
              "/var/log/cyborg_lite": root / "log-cyborg_lite",
              "/var/cache/ironic-accel": root / "cache-ironic-accel"}
    for system_dir in ("/etc/systemd/system", "/etc/sudoers.d"):
        places[system_dir].mkdir(parents=True)
    virtualenv = venv.create(places["/opt/cyborg-lite"])
    host = _host(
        tmp_path, built, virtualenv, cyborg_lite_create_user=True,
        cyborg_lite_user=user, cyborg_lite_group=user,
        cyborg_lite_wheel_dir=str(places["/var/cache/ironic-accel"]),
        cyborg_lite_config_dir=str(places["/etc/cyborg_lite"]),
        cyborg_lite_state_dir=str(places["/var/lib/cyborg_lite"]),
        cyborg_lite_systemd_dir=str(places["/etc/systemd/system"]),
        cyborg_lite_sudoers_dir=str(places["/etc/sudoers.d"]),
        cyborg_lite_pip_environment={"PIP_NO_DEPS": "1",
                                     "PIP_NO_INDEX": "1"})
    inventory = _inventory(tmp_path, host)
    installed = ansible_runner.run_playbook("cyborg-lite.yml", inventory,
                                            tmp_path)
    assert installed.returncode == 0, installed.output
    # operations.rst's Logs: a directory for log files, made by hand.
    places["/var/log/cyborg_lite"].mkdir()
    (places["/var/log/cyborg_lite"] / "agent.log").write_text("started\n")
    assert _user_exists(user) and _group_exists(user)
    assert sorted(p.name for p in places["/etc/sudoers.d"].iterdir()) == [
        "cyborg-lite-agent"]

    script = _uninstall_commands()
    for system_path, here in places.items():
        script = script.replace(system_path, str(here))
    script = re.sub(r"(?<![\w/.-])cyborg(?![\w/.-])", user, script)
    # NOTE(ironic-accel): this machine has no init to ask.
    script = "systemctl() { :; }\n" + script
    removed = subprocess.run(["bash", "-c", script], capture_output=True,
                             text=True, timeout=120)

    assert removed.returncode == 0, removed.stdout + removed.stderr
    left = sorted(str(path.relative_to(root)) for path in root.rglob("*"))
    assert left == ["sudoers.d", "systemd"], left
    assert not _user_exists(user)
    assert not _group_exists(user)
    # Nothing the role wrote went anywhere else.
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "ansible-home", "host", "hosts.yml"]


def test_a_host_without_privilege_escalation_is_told_what_it_needs(
        tmp_path, monkeypatch):
    # A host whose become_method cannot run (here: a sudo that is not
    # there, as on a fresh minimal image). Ansible skips become when the
    # connecting user is the one to become (root here), unless told not to.
    monkeypatch.setenv("ANSIBLE_BECOME_ALLOW_SAME_USER", "1")
    host = {"ansible_connection": "local", "ansible_become": True,
            "ansible_become_method": "sudo",
            "ansible_become_exe": str(tmp_path / "no-such-sudo"),
            "ansible_python_interpreter": sys.executable,
            # NOTE(ironic-accel): should the check not stop the run, it
            # must not touch this machine.
            "cyborg_lite_install": False, "cyborg_lite_create_user": False,
            "cyborg_lite_user": "root", "cyborg_lite_group": "root",
            "cyborg_lite_install_sudo": False,
            "cyborg_lite_manage_services": False,
            "cyborg_lite_config_dir": str(tmp_path / "etc"),
            "cyborg_lite_state_dir": str(tmp_path / "state"),
            "cyborg_lite_systemd_dir": str(tmp_path),
            "cyborg_lite_sudoers_dir": str(tmp_path),
            "cyborg_lite_sudoers_validate": False,
            "cyborg_lite_agent_drivers": ["sim"]}
    inventory = ansible_runner.write_inventory(tmp_path / "hosts.yml", {
        "cyborg_lite_agent": {"hosts": {"compute-0": host}}})

    run = ansible_runner.run_playbook("cyborg-lite.yml", inventory, tmp_path)

    assert run.returncode != 0
    assert run.recap["compute-0"]["failed"] == 1, run.output
    said = " ".join(run.output.split())
    assert ("compute-0: the cyborg_lite plays run as root (become: true, "
            "become_method sudo), and that failed here") in said, run.output
    assert "Give the connecting user sudo" in said
    assert not (tmp_path / "etc").exists()
    assert not (tmp_path / "state").exists()


def _task_status(output, task):
    """The status line (ok/changed/skipping) Ansible printed for ``task``."""
    block = output.split(f"TASK [cyborg_lite : {task}]", 1)[1]
    status = block.splitlines()[1:][0:3]
    return next(line for line in status if line.strip()).split(":", 1)[0]
