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

"""Run the project's playbooks with ansible-playbook, as an operator would."""

import json
import os
import pathlib
import re
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[3]
PLAYBOOKS = REPO / "playbooks"
BIN = pathlib.Path(sys.executable).parent

_RECAP = re.compile(r"^(\S+)\s*:\s*ok=(\d+)\s+changed=(\d+)\s+"
                    r"unreachable=(\d+)\s+failed=(\d+)", re.M)


class PlaybookRun:
    """The outcome of one ansible-playbook run.

    ``recap`` maps each host to its PLAY RECAP counters
    (``ok``, ``changed``, ``unreachable``, ``failed``).
    """

    def __init__(self, returncode, output):
        self.returncode = returncode
        self.output = output
        self.recap = {
            m.group(1): {"ok": int(m.group(2)), "changed": int(m.group(3)),
                         "unreachable": int(m.group(4)),
                         "failed": int(m.group(5))}
            for m in _RECAP.finditer(output)}

    def changed(self):
        """Total number of changed tasks over every host."""
        return sum(host["changed"] for host in self.recap.values())


def write_inventory(path, inventory):
    """Write an inventory (a dict in Ansible's YAML inventory shape)."""
    # NOTE(ironic-accel): JSON is YAML, and the YAML inventory plugin reads
    # a file named *.yml.
    path = pathlib.Path(path)
    path.write_text(json.dumps(inventory, indent=2))
    return path


def cli_vars(ironic_url):
    """Group variables pointing the roles at a noauth Ironic through the
    ``openstack`` CLI of this virtualenv."""
    return {
        "ironic_accel_openstack_cli": str(BIN / "openstack"),
        "ironic_accel_cloud_env": {"OS_AUTH_TYPE": "none",
                                   "OS_ENDPOINT": ironic_url},
    }


def run_playbook(playbook, inventory, workdir, extra_vars=None, limit=None,
                 timeout=600, check=False):
    """Run ``playbooks/<playbook>`` and return a :class:`PlaybookRun`.

    :param inventory: an inventory path, or a list of them (merged in order).
    :param check: run with ``--check`` (Ansible's check mode).
    """
    workdir = pathlib.Path(workdir)
    env = dict(os.environ)
    env.update({
        # NOTE(ironic-accel): a private ANSIBLE_HOME keeps parallel test
        # workers out of each other's ~/.ansible.
        "ANSIBLE_HOME": str(workdir / "ansible-home"),
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_RETRY_FILES_ENABLED": "0",
        "ANSIBLE_HOST_KEY_CHECKING": "0",
        "no_proxy": "127.0.0.1,localhost",
        "NO_PROXY": "127.0.0.1,localhost",
        "PATH": str(BIN) + os.pathsep + env.get("PATH", ""),
    })
    inventories = inventory if isinstance(inventory, list) else [inventory]
    cmd = [str(BIN / "ansible-playbook"), str(PLAYBOOKS / playbook)]
    for path in inventories:
        cmd += ["-i", str(path)]
    if extra_vars:
        cmd += ["-e", json.dumps(extra_vars)]
    if limit:
        cmd += ["--limit", limit]
    if check:
        cmd.append("--check")
    proc = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True,
                          text=True, timeout=timeout)
    return PlaybookRun(proc.returncode, proc.stdout + proc.stderr)
