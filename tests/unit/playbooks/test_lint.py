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

"""Every playbook parses and the whole tree is clean under ansible-lint."""

import os
import pathlib
import subprocess
import sys

import pytest

PLAYBOOKS = pathlib.Path(__file__).resolve().parents[3] / "playbooks"
BIN = pathlib.Path(sys.executable).parent
TOP_LEVEL = sorted(path.name for path in PLAYBOOKS.glob("*.yml"))


def _env(tmp_path):
    env = dict(os.environ)
    env.update({"ANSIBLE_HOME": str(tmp_path / "ansible-home"),
                "ANSIBLE_NOCOLOR": "1", "NO_COLOR": "1",
                "PATH": str(BIN) + os.pathsep + env.get("PATH", "")})
    return env


def test_playbooks_found():
    assert {"site.yml", "conductor.yml", "cyborg-lite.yml", "enroll.yml",
            "firmware.yml", "deploy-templates.yml"} <= set(TOP_LEVEL)


@pytest.mark.parametrize("playbook", TOP_LEVEL)
def test_syntax_check_passes(playbook, tmp_path):
    proc = subprocess.run(
        [str(BIN / "ansible-playbook"), "--syntax-check",
         "-i", "inventory/example", playbook],
        cwd=PLAYBOOKS, env=_env(tmp_path), capture_output=True, text=True)

    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ansible_lint_production_profile_is_clean(tmp_path):
    # NOTE(ironic-accel): ansible-lint keeps a cache in <project>/.ansible;
    # copy the tree so a test run leaves the work tree untouched.
    project = tmp_path / "playbooks"
    subprocess.run(["cp", "-r", str(PLAYBOOKS), str(project)], check=True)
    proc = subprocess.run(
        [str(BIN / "ansible-lint"), "--offline", "--nocolor"],
        cwd=project, env=_env(tmp_path), capture_output=True, text=True)

    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Profile 'production' was required, and it passed" in (
        proc.stdout + proc.stderr)
