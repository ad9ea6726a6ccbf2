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

"""The install pages walked as an operator walks them.

The commands and files are taken from the pages themselves (a change to a
page changes what runs here), with the pages' placeholders replaced by the
loopback services: install/cyborg-lite.rst's install command into a fresh
virtualenv, its production file (real Keystone, MariaDB, RabbitMQ), ``db
sync`` and the gunicorn line, then calls to the API; its standalone file
with ``inventory import``; install/ironic.rst's file loaded by Ironic's
driver factory as the conductor does at start.

What does not run here, and why: the ``baremetal`` commands need a cloud's
Ironic with BMCs (tests/functional/ironic_accel runs the same steps against
real Ironic and the BMC emulator); ``inventory sync`` needs Ironic nodes
(tests/functional/cyborg_lite/inventory); the ``openstack`` and SQL
commands create users, endpoints and databases of a cloud (the fixtures do
the same through the APIs); systemctl, journalctl and logrotate need a
system's init; the demo runs in tests/functional/e2e/test_demo.py.
"""

import configparser
import io
import json
import os
import shlex
import subprocess
import sys
import time

import pytest
import requests

from accel_tools.embedded.common import free_port
from cyborg_lite.db import migration
from tests.fixtures import databases
from tests.fixtures import venv
from tests.unit.doc import blocks

ROOT = blocks.ROOT
PAGES = blocks.DOCS / "install"


def _page_blocks(page):
    return blocks.blocks(PAGES / page)


def _command(page, marker):
    """The one command line of ``page`` that contains ``marker``, joined
    across its backslash continuations."""
    for block in _page_blocks(page):
        text = block.text.replace("\\\n", " ")
        for line in text.splitlines():
            if marker in line and not line.lstrip().startswith("#"):
                return " ".join(line.split())
    raise AssertionError(f"{page} has no command with {marker!r}")


def _config(page, with_section):
    """The first configuration file of ``page`` that has ``with_section``,
    as a ConfigParser."""
    for block in _page_blocks(page):
        if block.language == "ini" and f"[{with_section}]" in block.text:
            parser = configparser.ConfigParser(interpolation=None)
            parser.optionxform = str
            parser.read_string(block.text)
            return parser
    raise AssertionError(f"{page} shows no file with [{with_section}]")


def _write(parser, path):
    out = io.StringIO()
    parser.write(out)
    path.write_text(out.getvalue())
    return path


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A fresh virtualenv with the package installed as the page says."""
    workdir = tmp_path_factory.mktemp("walk")
    path = venv.create(workdir / "cyborg-lite")
    checkout = venv.clone_checkout(workdir / "ironic-accel")
    command = _command("cyborg-lite.rst", "'.[mysql,wsgi]'")
    assert command.startswith("/opt/cyborg-lite/bin/pip install")
    command = command.replace("/opt/cyborg-lite", str(path))
    # NOTE(docs): the dependencies come from the test environment (see
    # tests/fixtures/venv.py); the package itself is built from this
    # checkout and installed as the page says.
    env = dict(os.environ, PIP_NO_DEPS="1")
    proc = subprocess.run(shlex.split(command), cwd=checkout, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return path


def _run(installed, command, config_file, **kwargs):
    command = command.replace("/etc/cyborg_lite/cyborg_lite.conf",
                              str(config_file))
    argv = shlex.split(command)
    argv[0] = str(installed / "bin" / argv[0])
    return subprocess.run(argv, capture_output=True, text=True, timeout=300,
                          **kwargs)


def _serve(installed, config_file, port):
    """The page's gunicorn line, on the loopback."""
    line = _command("cyborg-lite.rst", "cyborg_lite.wsgi:application")
    env_part, _, command = line.partition(" gunicorn ")
    assert env_part.startswith("CYBORG_LITE_CONFIG=")
    command = command.replace("0.0.0.0:6666", f"127.0.0.1:{port}")
    command = command.replace("--workers 4", "--workers 2")
    # NOTE(docs): gunicorn runs as a module of the fresh environment's
    # Python, so it imports the package installed there.
    argv = [str(installed / "bin" / "python"), "-m", "gunicorn"]
    argv += shlex.split(command)
    return subprocess.Popen(
        argv, env={"CYBORG_LITE_CONFIG": str(config_file),
                   "PATH": f"{installed}/bin:/usr/bin:/bin"},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        start_new_session=True)


def _wait(server, url):
    deadline = time.monotonic() + 90
    while True:
        try:
            return requests.get(url, timeout=10)
        except (requests.ConnectionError, requests.Timeout):
            assert server.poll() is None, server.stderr.read().decode()
            assert time.monotonic() < deadline, "the API did not start"
            time.sleep(0.3)


@pytest.mark.mariadb
@pytest.mark.rabbitmq
def test_production_file_db_sync_and_api_behind_keystone(
        installed, keystone, rabbitmq_url, tmp_path):
    conf = _config("cyborg-lite.rst", "keystone_authtoken")
    assert conf["DEFAULT"]["auth_strategy"] == "keystone"
    conf["DEFAULT"]["transport_url"] = rabbitmq_url
    for option, value in (("www_authenticate_uri", keystone.url),
                          ("auth_url", keystone.url),
                          ("password", keystone.passwords["cyborg"])):
        conf["keystone_authtoken"][option] = value
    # The page: "a section for another service is left out when that
    # service is not part of the deployment" (none of them runs here).
    for section in ("nova", "placement", "ironic", "glance"):
        assert conf.remove_section(section)
    port = free_port()
    with databases.database("mariadb", tmp_path) as url:
        conf["database"]["connection"] = url
        config_file = _write(conf, tmp_path / "cyborg_lite.conf")

        sync = _run(installed, _command("cyborg-lite.rst", "db sync"),
                    config_file)
        again = _run(installed, _command("cyborg-lite.rst", "db sync"),
                     config_file)

        assert sync.returncode == 0, sync.stderr
        assert (f"schema migrated from empty to the newest revision "
                f"({migration.head()})") in sync.stdout
        assert "schema already at the newest revision" in again.stdout
        server = _serve(installed, config_file, port)
        try:
            base = f"http://127.0.0.1:{port}"
            assert _wait(server, f"{base}/").status_code == 200
            anonymous = requests.get(f"{base}/v2/accelerator_requests",
                                     timeout=10)
            member = requests.get(
                f"{base}/v2/accelerator_requests", timeout=10,
                headers={"X-Auth-Token": keystone.token("member-a")})
            health = requests.get(f"{base}/healthcheck", timeout=10)
        finally:
            server.terminate()
            server.wait(30)
    assert anonymous.status_code == 401, anonymous.text
    assert member.status_code == 200, member.text
    assert member.json() == {"arqs": []}
    assert health.status_code == 200, health.text


def test_standalone_file_inventory_import_and_api(installed, tmp_path):
    conf = _config("cyborg-lite.rst", "noauth")
    assert conf["DEFAULT"]["auth_strategy"] == "noauth"
    port = free_port()
    conf["api"]["port"] = str(port)
    conf["database"]["connection"] = (
        f"sqlite:///{tmp_path / 'cyborg_lite.sqlite'}")
    conf["agent"]["enabled_drivers"] = "sim"   # no FPGA on this host
    conf["agent"]["sim_state_dir"] = str(tmp_path / "sim")
    config_file = _write(conf, tmp_path / "cyborg_lite.conf")
    example = ROOT / "etc" / "cyborg_lite" / "inventory.example.json"
    import_line = _command("cyborg-lite.rst", "inventory import --host")
    import_line = import_line.replace("/etc/cyborg_lite/inventory.json",
                                      str(example))

    sync = _run(installed, _command("cyborg-lite.rst", "db sync"),
                config_file)
    imported = _run(installed, import_line, config_file)

    assert sync.returncode == 0, sync.stderr
    assert imported.returncode == 0, imported.stderr
    # The manage commands of reference/console-scripts.rst, with the exit
    # codes it gives: 2 when a section the command needs is missing.
    manage = ("cyborg-lite-manage --config-file "
              "/etc/cyborg_lite/cyborg_lite.conf ")
    pools = _run(installed, manage + "pools status --json", config_file)
    assert pools.returncode == 0, pools.stderr
    json.loads(pools.stdout)
    resend = _run(installed, manage + "notifications resend", config_file)
    assert resend.returncode == 2, resend.stderr
    assert "[nova] is not configured" in resend.stderr
    no_ironic = _run(installed, manage + "inventory sync", config_file)
    assert no_ironic.returncode == 2, no_ironic.stderr
    assert "[ironic] is not configured" in no_ironic.stderr
    api_line = _command("cyborg-lite.rst", "cyborg-lite-api --config-file")
    api_argv = shlex.split(api_line.replace(
        "/etc/cyborg_lite/cyborg_lite.conf", str(config_file)))
    api_argv[0] = str(installed / "bin" / api_argv[0])
    server = subprocess.Popen(api_argv, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, start_new_session=True)
    try:
        base = f"http://127.0.0.1:{port}"
        assert _wait(server, f"{base}/").status_code == 200
        deployables = requests.get(f"{base}/v2/deployables", timeout=10)
    finally:
        server.terminate()
        server.wait(30)
    assert deployables.status_code == 200, deployables.text
    assert deployables.json()["deployables"], deployables.text


def test_ironic_page_file_loads_in_ironic_as_a_conductor_starts(tmp_path):
    block = next(block for block in _page_blocks("ironic.rst")
                 if block.language == "ini")
    sample = (ROOT / "etc" / "ironic_accel" /
              "ironic.conf.accel-redfish.sample").read_text()
    # The sample's test-bed lines, uncommented, beside the page's file.
    test_bed = [line[1:] for line in sample.splitlines()
                if line.startswith(("#enabled_boot_interfaces",
                                    "#enabled_deploy_interfaces"))]
    assert len(test_bed) == 2
    # NOTE(docs): Ironic's default vendor interfaces include ipmitool,
    # which needs the ipmitool binary this host lacks.
    text = block.text.replace(
        "[DEFAULT]\n", "[DEFAULT]\n" + "\n".join(test_bed)
        + "\nenabled_vendor_interfaces = redfish,no-vendor\n", 1)
    config_file = tmp_path / "ironic.conf"
    config_file.write_text(text)
    probe = (
        "import json, sys\n"
        "from ironic.conf import CONF\n"
        "import ironic_accel.conf\n"
        "ironic_accel.conf.register_opts(CONF)\n"
        "CONF(['--config-file', sys.argv[1]], project='ironic')\n"
        "from ironic.common import driver_factory\n"
        "loaded = {}\n"
        "for name, hw in driver_factory.hardware_types().items():\n"
        "    kinds = driver_factory.enabled_supported_interfaces(hw)\n"
        "    loaded[name] = {kind: driver_factory.default_interface(\n"
        "        hw, kind, driver_name=name) for kind in kinds}\n"
        "print(json.dumps(loaded))\n")
    proc = subprocess.run([sys.executable, "-c", probe, str(config_file)],
                          capture_output=True, text=True, timeout=120)

    assert proc.returncode == 0, proc.stderr[-3000:]
    loaded = json.loads(proc.stdout.strip().splitlines()[-1])
    assert set(loaded) == {"redfish", "accel-redfish"}
    assert loaded["accel-redfish"]["firmware"] == "accel-redfish"
    assert loaded["redfish"]["boot"] == "redfish-virtual-media"
