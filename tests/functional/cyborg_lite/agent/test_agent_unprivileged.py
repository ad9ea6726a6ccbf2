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

"""cyborg-lite-agent deployed by the cyborg_lite role and run as the role
runs it: as the role's own unprivileged user (``User=``/``ExecStart=`` of
the unit it writes), its privsep daemon started through sudo, the sudoers
rule, oslo-rootwrap and the filter the role writes, keeping the
capabilities ``cyborg_lite.agent.privsep`` declares.

The agent serves the ``intel_opae`` driver on a fake sysfs tree; its
``fpgaconf`` is a root-owned stand-in that "loads" an image the way the
real one ends up doing (the image's AFU id appears in the port's
``afu_id``), so programming runs the real privileged path without an FPGA.

NOTE(tests): the role's virtualenv here is one of the system's Python (a
host's virtualenv is readable by its services; the test environment's
interpreter may lie under /root), seeing the test environment's packages.
"""

import configparser
import os
import pathlib
import pwd
import shlex
import shutil
import signal
import sys
import time
import uuid

import pytest

from cyborg_lite.agent import exception
from cyborg_lite.agent import privsep
from cyborg_lite.agent import rpcapi
from tests.fixtures import rabbitmq
from tests.fixtures import unprivileged
from tests.functional.playbooks import ansible_runner
from tests.unit.cyborg_lite.agent.conftest import copy_sysfs
from tests.unit.cyborg_lite.agent.test_images import write_catalog

pytestmark = pytest.mark.rabbitmq

FPGA = "0000:5e:00.0"
AFU_ID = os.path.join("sys", "class", "fpga_region", "region0",
                      "dfl-port.0", "afu_id")
NLB3 = "f7df405c-bd7a-cf72-22f1-44b0b93acd18"
SUDOERS_D = "/etc/sudoers.d"

# The stand-in for OPAE's fpgaconf: it records its arguments and its own
# /proc status, then "loads" the image (its last argument).
_FPGACONF = """\
#!/bin/sh
set -e
for image; do :; done
printf '%s\\n' "$*" >> {calls}
cat /proc/$$/status > {status}
cat "$image" > {afu_id}
"""


def _skip_reason():
    if os.geteuid() != 0:
        return ("the test creates the agent's user and installs its sudoers "
                "rule: it needs root")
    missing = unprivileged.missing_tool("sudo", "visudo", "useradd")
    if missing:
        return (f"{missing} is not installed (.ci/run installs sudo with "
                f"apt-get)")
    if not os.access(unprivileged.SYSTEM_PYTHON, os.X_OK):
        return (f"no {unprivileged.SYSTEM_PYTHON} for the agent's user to "
                f"run (the test environment's Python minor version)")
    return None


@pytest.fixture(scope="module")
def deployed(rabbitmq_url):
    """The role run for a compute host whose agent serves intel_opae on a
    fake sysfs tree; the role's sudoers rule installed for sudo."""
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    base = unprivileged.world_readable_dir("cyborg-lite-unprivileged-")
    user = f"cltest-{uuid.uuid4().hex[:10]}"
    sudoers = os.path.join(SUDOERS_D, f"cyborg-lite-test-{user}")
    try:
        yield _deploy(base, user, sudoers, rabbitmq_url)
    finally:
        if os.path.exists(sudoers):
            os.unlink(sudoers)
        unprivileged.remove_user(user)
        shutil.rmtree(base, ignore_errors=True)


def _deploy(base, user, sudoers, url):
    venv = unprivileged.create_venv(
        os.path.join(base, "venv"),
        ["cyborg-lite-agent", "oslo-rootwrap", "privsep-helper"])
    root = copy_sysfs("sysfs_opae", pathlib.Path(base))
    catalog = os.path.join(base, "catalog")
    write_catalog(pathlib.Path(catalog), [
        ("img-nlb3", NLB3, NLB3.encode(), None),
        ("img-stray", NLB3, NLB3.encode(), None)])
    # An image file leading out of the image directories: the catalog's
    # checksum is right, the path is not.
    stray = os.path.join(base, "elsewhere", "img-stray.gbs")
    os.makedirs(os.path.dirname(stray))
    shutil.move(os.path.join(catalog, "img-stray.gbs"), stray)
    os.symlink(stray, os.path.join(catalog, "img-stray.gbs"))
    tools = os.path.join(base, "tools")
    os.makedirs(tools)
    fpgaconf = os.path.join(tools, "fpgaconf")
    with open(fpgaconf, "w") as handle:
        handle.write(_FPGACONF.format(
            calls=shlex.quote(os.path.join(tools, "fpgaconf.calls")),
            status=shlex.quote(os.path.join(tools, "fpgaconf.status")),
            afu_id=shlex.quote(os.path.join(root, AFU_ID))))
    os.chmod(fpgaconf, 0o755)

    host = rabbitmq.unique("agent-host")
    exchange = rabbitmq.unique("exchange")
    state = os.path.join(base, "state")
    host_vars = {
        "ansible_connection": "local", "ansible_become": False,
        "ansible_python_interpreter": sys.executable,
        "cyborg_lite_install": False,
        "cyborg_lite_user": user, "cyborg_lite_group": user,
        "cyborg_lite_manage_services": False,
        "cyborg_lite_virtualenv": venv,
        "cyborg_lite_config_dir": os.path.join(base, "etc"),
        "cyborg_lite_state_dir": state,
        "cyborg_lite_systemd_dir": os.path.join(base, "systemd"),
        "cyborg_lite_sudoers_dir": os.path.join(base, "sudoers"),
        "cyborg_lite_transport_url": url,
        "cyborg_lite_agent_host": host,
        "cyborg_lite_agent_drivers": ["intel_opae"],
        "cyborg_lite_extra_config": {
            "DEFAULT": {"control_exchange": exchange, "debug": True,
                        "log_file": os.path.join(state, "agent.log")},
            "oslo_messaging_rabbit": {"rabbit_retry_interval": 1,
                                      "rabbit_retry_backoff": 1},
            "agent": {"sysfs_root": root, "image_catalog_dir": catalog,
                      "image_cache_dir": os.path.join(state, "images"),
                      "fpgaconf_path": fpgaconf, "tool_timeout": 60}},
    }
    for directory in ("systemd", "sudoers"):
        os.makedirs(os.path.join(base, directory))
    inventory = ansible_runner.write_inventory(
        os.path.join(base, "hosts.yml"),
        {"cyborg_lite_agent": {"hosts": {"compute-0": host_vars}}})
    run = ansible_runner.run_playbook("cyborg-lite.yml", inventory, base)
    assert run.returncode == 0, run.output
    # NOTE(tests): the rule goes where sudo reads it under a name of this
    # test's own, so parallel workers never share one file.
    shutil.copy(os.path.join(base, "sudoers", "cyborg-lite-agent"), sudoers)
    os.chmod(sudoers, 0o440)

    unit = configparser.ConfigParser(interpolation=None, strict=False)
    unit.read(os.path.join(base, "systemd", "cyborg-lite-agent.service"))
    service = unit["Service"]
    config = os.path.join(base, "etc", "cyborg_lite.conf")
    probe = unprivileged.run_as(
        service["User"], [os.path.join(venv, "bin", "python"), "-c",
                          "import cyborg_lite.agent.privsep"],
        capture_output=True, text=True, cwd="/")
    if probe.returncode != 0:
        pytest.skip(f"the agent's user cannot import the test environment "
                    f"(is the checkout readable by other users?): "
                    f"{probe.stderr.strip().splitlines()[-1:]}")
    return {"base": base, "user": service["User"], "host": host,
            "etc": os.path.join(base, "etc"),
            "exchange": exchange, "url": url, "config": config,
            "command": shlex.split(service["ExecStart"]),
            "log": os.path.join(state, "agent.log"), "root": root,
            "calls": os.path.join(tools, "fpgaconf.calls"),
            "tool_status": os.path.join(tools, "fpgaconf.status")}


def _privsep_daemons(config):
    """The privsep daemons started with the agent's configuration file:
    ``privsep-helper`` itself, not the sudo and oslo-rootwrap processes
    that start it (they name it as an argument)."""
    return unprivileged.processes(
        lambda argv: len(argv) > 1 and argv[1].endswith("/privsep-helper")
        and config in argv)


def _wait_gone(pids, timeout=20):
    deadline = time.monotonic() + timeout
    while any(os.path.exists(f"/proc/{pid}") for pid in pids):
        if time.monotonic() > deadline:
            for pid in pids:
                os.kill(pid, signal.SIGKILL)
            raise AssertionError(f"privsep daemons {pids} outlived the agent")
        time.sleep(0.1)


def _log(deployed):
    with open(deployed["log"]) as handle:
        return handle.read()


def _calls(deployed):
    try:
        with open(deployed["calls"]) as handle:
            return handle.read().splitlines()
    except FileNotFoundError:
        return []


@pytest.fixture
def agent(deployed):
    """The agent started as the role's unit starts it, as its user."""
    conf = rabbitmq.client_conf(deployed["config"])
    api = rpcapi.AgentAPI(conf)
    if os.path.exists(deployed["log"]):
        os.unlink(deployed["log"])
    process = rabbitmq.AgentProcess(
        deployed["config"], deployed["log"], command=deployed["command"],
        user=deployed["user"]).start()
    try:
        process.wait_ready(api, deployed["host"], timeout=60)
        yield api, process
    finally:
        daemons = _privsep_daemons(deployed["config"])
        process.stop()
        api.transport.cleanup()
        rabbitmq.delete_exchange(deployed["url"], deployed["exchange"],
                                 deployed["host"])
        _wait_gone(daemons)


def test_the_agent_holds_no_privilege_and_programs_through_privsep(
        deployed, agent):
    api, process = agent
    user = pwd.getpwnam(deployed["user"])

    agent_status = unprivileged.status(process.process.pid)
    assert agent_status["Uid"].split() == [str(user.pw_uid)] * 4
    assert agent_status["Gid"].split() == [str(user.pw_gid)] * 4
    assert agent_status["Groups"] == ""
    for field in ("CapEff", "CapPrm", "CapAmb"):
        assert int(agent_status[field], 16) == 0, (field, agent_status)
    assert _privsep_daemons(deployed["config"]) == []

    result = api.program_region(deployed["host"], FPGA, "0",
                                bitstream_id="img-nlb3")

    assert (result["function_id"], result["image"]["id"]) == (
        NLB3, "img-nlb3")
    assert api.current_function(deployed["host"], FPGA, "0")[
        "function_id"] == NLB3
    image = os.path.join(deployed["base"], "catalog", "img-nlb3.gbs")
    assert _calls(deployed)[-1] == (
        f"--bus 0x5e --device 0x00 --function 0x0 {image}")
    # fpgaconf ran as root, started by the daemon.
    with open(deployed["tool_status"]) as status:
        assert "Uid:\t0\t0\t0\t0\n" in status.read()
    # The daemon: root, with exactly the capabilities the context declares,
    # started with the command the role configured: through sudo.
    [daemon] = _privsep_daemons(deployed["config"])
    daemon_status = unprivileged.status(daemon)
    assert daemon_status["Uid"].split() == ["0"] * 4
    declared = unprivileged.capability_mask(privsep.CAPABILITIES)
    assert declared == (1 << 1) | (1 << 21)
    assert int(daemon_status["CapEff"], 16) == declared
    assert int(daemon_status["CapPrm"], 16) == declared
    venv = os.path.dirname(deployed["command"][0])
    assert (f"Running privsep helper: ['sudo', '{venv}/oslo-rootwrap', "
            f"'{deployed['etc']}/rootwrap.conf', 'privsep-helper', "
            f"'--config-file', '{deployed['config']}'") in _log(deployed)
    # The agent itself still holds nothing.
    agent_status = unprivileged.status(process.process.pid)
    assert int(agent_status["CapEff"], 16) == 0
    assert agent_status["Uid"].split() == [str(user.pw_uid)] * 4


def test_an_image_outside_the_image_directories_never_crosses(
        deployed, agent):
    api, _process = agent
    calls = _calls(deployed)

    with pytest.raises(exception.InvalidRequest,
                       match="not under the agent's image directories"):
        api.program_region(deployed["host"], FPGA, "0",
                           bitstream_id="img-stray")

    # Refused by the agent: no daemon was started, no tool ran.
    assert _calls(deployed) == calls
    assert _privsep_daemons(deployed["config"]) == []
    assert "privsep daemon starting" not in _log(deployed)
