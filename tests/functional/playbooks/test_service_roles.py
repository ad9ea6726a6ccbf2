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

"""conductor.yml and cyborg-lite.yml on this host: what they write is what
the real services read and run."""

import configparser
import json
import os
import shlex
import signal
import subprocess
import sys
import time
import uuid

import requests

from accel_tools.embedded.common import free_port
from tests.fixtures import rabbitmq
from tests.functional.playbooks import ansible_runner


def _local_host(**host_vars):
    # NOTE(ironic-accel): the plays say become: true; the variable wins over
    # the keyword, and the tests already run with the rights they need.
    return dict({"ansible_connection": "local", "ansible_become": False,
                 "ansible_python_interpreter": sys.executable}, **host_vars)


def test_conductor_snippet_is_read_by_ironic_config(tmp_path):
    conf_dir = tmp_path / "ironic.conf.d"
    inventory = ansible_runner.write_inventory(tmp_path / "hosts.yml", {
        "ironic_conductor": {"hosts": {"conductor-0": _local_host(
            ironic_accel_conductor_install=False,
            ironic_accel_conductor_manage_service=False,
            ironic_accel_conductor_config_dir=str(conf_dir),
            ironic_accel_conductor_config_owner="root",
            ironic_accel_conductor_config_group="root",
            ironic_accel_conductor_options={"task_poll_interval": 0.5,
                                            "compute_host_source":
                                                "extra:compute_host"},
            ironic_accel_conductor_verify_ca="/etc/ssl/bmc-ca.pem")}}})

    first = ansible_runner.run_playbook("conductor.yml", inventory, tmp_path)
    second = ansible_runner.run_playbook("conductor.yml", inventory, tmp_path)

    assert first.returncode == 0, first.output
    assert first.recap["conductor-0"]["changed"] == 2, first.output
    assert second.returncode == 0, second.output
    assert second.changed() == 0, second.output
    # Ironic's own option set, with the plugin's registered as the plugin
    # does when Ironic loads it, reading the default config dir layout.
    probe = (
        "import json, sys\n"
        "from ironic.conf import CONF\n"
        "import ironic_accel.conf\n"
        "ironic_accel.conf.register_opts(CONF)\n"
        "CONF(['--config-dir', sys.argv[1]], project='ironic')\n"
        "print(json.dumps({'types': CONF.enabled_hardware_types,\n"
        "  'firmware': CONF.enabled_firmware_interfaces,\n"
        "  'poll': CONF.ironic_accel.task_poll_interval,\n"
        "  'host_source': CONF.ironic_accel.compute_host_source,\n"
        "  'verify_ca': CONF['accel-redfish'].verify_ca}))\n")
    proc = subprocess.run([sys.executable, "-c", probe, str(conf_dir)],
                          capture_output=True, text=True, check=True)
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {
        "types": ["accel-redfish", "redfish"],
        "firmware": ["accel-redfish", "redfish", "no-firmware"],
        "poll": 0.5, "host_source": "extra:compute_host",
        "verify_ca": "/etc/ssl/bmc-ca.pem"}


def test_cyborg_lite_role_syncs_db_and_its_api_unit_serves(tmp_path):
    port = free_port()
    host = _local_host(
        cyborg_lite_install=False, cyborg_lite_create_user=False,
        cyborg_lite_user="root", cyborg_lite_group="root",
        cyborg_lite_manage_services=False,
        cyborg_lite_virtualenv=sys.prefix,
        cyborg_lite_config_dir=str(tmp_path / "etc"),
        cyborg_lite_state_dir=str(tmp_path / "state"),
        cyborg_lite_systemd_dir=str(tmp_path),
        cyborg_lite_sudoers_dir=str(tmp_path),
        cyborg_lite_sudoers_validate=False,
        cyborg_lite_install_sudo=False,
        cyborg_lite_auth_strategy="noauth",
        cyborg_lite_api_bind_host="127.0.0.1", cyborg_lite_api_port=port,
        cyborg_lite_api_workers=2, cyborg_lite_agent_host="compute-0.test",
        cyborg_lite_agent_drivers=["sim"])
    inventory = ansible_runner.write_inventory(tmp_path / "hosts.yml", {
        "cyborg_lite_api": {"hosts": {"controller-0": host}},
        "cyborg_lite_agent": {"hosts": {"controller-0": {}}}})

    first = ansible_runner.run_playbook("cyborg-lite.yml", inventory,
                                        tmp_path)
    second = ansible_runner.run_playbook("cyborg-lite.yml", inventory,
                                         tmp_path)

    assert first.returncode == 0, first.output
    assert "Create or upgrade the database schema" in first.output
    assert (tmp_path / "state" / "cyborg_lite.sqlite").exists()
    assert second.returncode == 0, second.output
    assert second.changed() == 0, second.output
    conf = configparser.ConfigParser()
    conf.read(tmp_path / "etc" / "cyborg_lite.conf")
    assert conf["agent"]["host"] == "compute-0.test"
    assert conf["agent"]["enabled_drivers"] == "sim"
    agent_unit = (tmp_path / "cyborg-lite-agent.service").read_text()
    assert (f"ExecStart={sys.prefix}/bin/cyborg-lite-agent --config-file "
            f"{tmp_path}/etc/cyborg_lite.conf") in agent_unit

    # Run the API exactly as the unit says, and ask it for its versions.
    unit = configparser.ConfigParser(interpolation=None, strict=False)
    unit.read(tmp_path / "cyborg-lite-api.service")
    env = dict(item.split("=", 1)
               for item in shlex.split(unit["Service"]["Environment"]))
    assert env["PROMETHEUS_MULTIPROC_DIR"] == (
        "/run/cyborg-lite-api/metrics")
    assert unit["Service"]["RuntimeDirectory"] == "cyborg-lite-api"
    # NOTE(ironic-accel): what systemd's RuntimeDirectory would give.
    env["PROMETHEUS_MULTIPROC_DIR"] = str(tmp_path / "run" / "metrics")
    server = subprocess.Popen(
        shlex.split(unit["Service"]["ExecStart"]),
        env=dict(env, PATH=f"{sys.prefix}/bin"),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                rsp = requests.get(f"http://127.0.0.1:{port}/", timeout=10)
                break
            except (requests.ConnectionError, requests.Timeout):
                assert server.poll() is None, server.stderr.read()
                assert time.monotonic() < deadline, "API did not start"
                time.sleep(0.2)
        assert rsp.status_code == 200
        assert rsp.json()["versions"][0]["id"].startswith("v2")
        arqs_url = f"http://127.0.0.1:{port}/v2/accelerator_requests"
        arqs = requests.get(arqs_url, timeout=5, headers={
            "X-Project-Id": "p1", "X-User-Id": "u1", "X-Roles": "reader"})
        assert arqs.status_code == 200, arqs.text
        # noauth grants no role to a request without identity headers.
        assert requests.get(arqs_url, timeout=5).status_code == 403
    finally:
        server.terminate()
        server.wait(15)


def _agent_only_host(tmp_path, **host_vars):
    return _local_host(
        cyborg_lite_install=False, cyborg_lite_create_user=False,
        cyborg_lite_user="root", cyborg_lite_group="root",
        cyborg_lite_manage_services=False,
        cyborg_lite_virtualenv=sys.prefix,
        cyborg_lite_config_dir=str(tmp_path / "etc"),
        cyborg_lite_state_dir=str(tmp_path / "state"),
        cyborg_lite_systemd_dir=str(tmp_path),
        cyborg_lite_sudoers_dir=str(tmp_path),
        cyborg_lite_sudoers_validate=False,
        cyborg_lite_install_sudo=False, **host_vars)


def test_cyborg_lite_role_refuses_an_agent_without_drivers(tmp_path):
    inventory = ansible_runner.write_inventory(tmp_path / "hosts.yml", {
        "cyborg_lite_agent": {"hosts": {"compute-0": _agent_only_host(
            tmp_path)}}})

    result = ansible_runner.run_playbook("cyborg-lite.yml", inventory,
                                         tmp_path)

    assert result.returncode != 0
    assert "name the drivers of its hardware" in result.output
    assert not (tmp_path / "etc" / "cyborg_lite.conf").exists()


def test_cyborg_lite_role_deployed_agent_starts(tmp_path, rabbitmq_url):
    """The agent unit the role writes starts and serves, its state under
    the role's one state directory."""
    exchange = f"role_agent_{uuid.uuid4().hex[:8]}"
    inventory = ansible_runner.write_inventory(tmp_path / "hosts.yml", {
        "cyborg_lite_agent": {"hosts": {"compute-0": _agent_only_host(
            tmp_path, cyborg_lite_agent_drivers=["sim"],
            cyborg_lite_transport_url=rabbitmq_url,
            cyborg_lite_agent_host=f"{exchange}.test",
            cyborg_lite_extra_config={
                "DEFAULT": {"control_exchange": exchange,
                            "log_file": str(tmp_path / "agent.log")}})}}})

    result = ansible_runner.run_playbook("cyborg-lite.yml", inventory,
                                         tmp_path)

    assert result.returncode == 0, result.output
    conf = configparser.ConfigParser()
    conf.read(tmp_path / "etc" / "cyborg_lite.conf")
    assert conf["agent"]["sim_state_dir"] == str(tmp_path / "state" / "sim")
    assert conf["agent"]["image_catalog_dir"] == str(
        tmp_path / "state" / "images")
    unit = configparser.ConfigParser(interpolation=None, strict=False)
    unit.read(tmp_path / "cyborg-lite-agent.service")
    agent = subprocess.Popen(
        shlex.split(unit["Service"]["ExecStart"]),
        env={"PATH": f"{sys.prefix}/bin"}, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, start_new_session=True)
    log = tmp_path / "agent.log"
    try:
        deadline = time.monotonic() + 60
        while "cyborg-lite agent serving" not in (
                log.read_text() if log.exists() else ""):
            assert agent.poll() is None, (
                agent.stderr.read().decode(errors="replace")
                + (log.read_text() if log.exists() else ""))
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        assert (tmp_path / "state" / "sim").is_dir()
        assert agent.poll() is None
    finally:
        os.killpg(agent.pid, signal.SIGTERM)
        agent.wait(timeout=30)
        rabbitmq.delete_exchange(rabbitmq_url, exchange, f"{exchange}.test")
