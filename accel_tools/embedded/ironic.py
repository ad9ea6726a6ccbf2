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

"""Real Ironic (from PyPI) all-in-one, with the accel-redfish plugin.

The ``ironic`` console script runs API and conductor in one process: sqlite
(schema from ``ironic-dbsync create_schema``), ``rpc_transport = none``,
``auth_strategy = noauth``, the ``accel-redfish`` hardware type with Ironic's
``fake`` boot/deploy interfaces and Redfish power/management. Interfaces are
set per node (:func:`enroll`), not through ``default_*_interface``. The port
is picked at run time; the log stays in the work directory.

Given a Placement URL, the plugin's ``[placement]`` group points at it, so
the conductor reports each node's accelerators after every inventory
refresh::

    server = IronicServer(workdir, placement_url=placement.url)
    server.start()
    baremetal = server.connection().baremetal
    node = manage(baremetal, enroll(baremetal, bmc, name="compute-1"))
"""

import configparser
import os
import signal
import subprocess
import sys
import time

import requests

from accel_tools.embedded import common
from accel_tools.embedded import images
from accel_tools.embedded import placement as placement_mod

_CONF_TEMPLATE = """\
[DEFAULT]
debug = False
log_file = {log_file}
auth_strategy = noauth
rpc_transport = none
host = {host}
enabled_hardware_types = accel-redfish,fake-hardware
enabled_boot_interfaces = fake
enabled_deploy_interfaces = fake
enabled_power_interfaces = redfish,fake
enabled_management_interfaces = redfish,fake
enabled_firmware_interfaces = accel-redfish,redfish,no-firmware
enabled_bios_interfaces = no-bios
enabled_console_interfaces = no-console
enabled_inspect_interfaces = no-inspect
enabled_raid_interfaces = no-raid
enabled_rescue_interfaces = no-rescue
enabled_vendor_interfaces = no-vendor
enabled_network_interfaces = noop
enabled_storage_interfaces = noop

[api]
host_ip = 127.0.0.1
port = {port}

[database]
connection = sqlite:///{db_file}

[conductor]
automated_clean = False
heartbeat_interval = 1
sync_power_state_interval = -1
power_state_change_timeout = 5
periodic_max_workers = 4

[redfish]
firmware_update_status_interval = 60
firmware_source = {firmware_source}

[deploy]
http_root = {http_root}
http_url = {http_url}

[dhcp]
dhcp_provider = none

[oslo_concurrency]
lock_path = {workdir}/locks

[ironic_accel]
task_poll_interval = {poll_interval}
bmc_retries = 2
bmc_retry_interval = 0.2
bmc_unavailable_timeout = {unavailable_timeout}
"""

#: Interfaces every node gets explicitly: fakes for all but the
#: Redfish-speaking ones the plugin tests.
NODE_INTERFACES = {
    "boot_interface": "fake",
    "deploy_interface": "fake",
    "power_interface": "redfish",
    "management_interface": "redfish",
    "firmware_interface": "accel-redfish",
    "bios_interface": "no-bios",
    "console_interface": "no-console",
    "inspect_interface": "no-inspect",
    "raid_interface": "no-raid",
    "rescue_interface": "no-rescue",
    "vendor_interface": "no-vendor",
    "network_interface": "noop",
    "storage_interface": "noop",
}

#: API microversion the helpers ask for (firmware components need 1.86).
API_VERSION = "1.95"

free_port = common.free_port


def _bin(name):
    return os.path.join(os.path.dirname(sys.executable), name)


class IronicServer:
    """One ``ironic`` all-in-one process; ``url`` is its API endpoint.

    The constructor writes the configuration and creates the schema.

    :param workdir: directory for configuration, database, locks and logs.
    :param poll_interval: ``[ironic_accel] task_poll_interval``.
    :param unavailable_timeout: ``[ironic_accel] bmc_unavailable_timeout``.
    :param placement_url: a Placement endpoint (``noauth2``, token
        ``admin``) for the plugin's ``[placement]`` group; None leaves
        Placement reporting off.
    :param firmware_source: ``[redfish] firmware_source``; the checked
        images the BMC fetches are staged under ``http_root`` (a directory
        of ``workdir``), served at ``http_url`` from a thread of the
        launching process, as Ironic's HTTP server would serve them.
    :param options: extra ``{section: {option: value}}`` for the
        configuration file.
    :raises subprocess.CalledProcessError: when the schema cannot be
        created (its output attached).
    """

    def __init__(self, workdir, poll_interval=0.5, unavailable_timeout=6,
                 placement_url=None, options=None, firmware_source="http"):
        self.workdir = workdir
        self.port = common.free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.http_root = os.path.join(workdir, "httpboot")
        self.http_port = common.free_port()
        self.http_url = f"http://127.0.0.1:{self.http_port}/"
        self.http_server = None
        #: The conductor's temporary directory (its TMPDIR).
        self.tempdir = os.path.join(workdir, "tmp")
        os.makedirs(self.http_root, exist_ok=True)
        os.makedirs(self.tempdir, exist_ok=True)
        self.log_file = os.path.join(workdir, "ironic.log")
        self.stdout_file = os.path.join(workdir, "ironic.stdout")
        self.config_file = os.path.join(workdir, "ironic.conf")
        self.placement_url = placement_url
        self.process = None
        self.start_seconds = None
        os.makedirs(os.path.join(workdir, "locks"), exist_ok=True)
        text = _CONF_TEMPLATE.format(
            log_file=self.log_file, port=self.port,
            db_file=os.path.join(workdir, "ironic.sqlite"),
            host=f"conductor-{self.port}", workdir=workdir,
            poll_interval=poll_interval,
            unavailable_timeout=unavailable_timeout,
            firmware_source=firmware_source, http_root=self.http_root,
            http_url=self.http_url)
        if placement_url:
            text += "\n" + placement_mod.client_conf_text(placement_url)
        with open(self.config_file, "w") as f:
            f.write(text)
        if options:
            self._add_options(options)
        subprocess.run([_bin("ironic-dbsync"), "--config-file",
                        self.config_file, "create_schema"], check=True,
                       capture_output=True, env=self._env())

    def _add_options(self, options):
        parser = configparser.ConfigParser(interpolation=None)
        parser.optionxform = str
        parser.read(self.config_file)
        for section, values in options.items():
            if section != "DEFAULT" and not parser.has_section(section):
                parser.add_section(section)
            for name, value in values.items():
                parser.set(section, name, str(value))
        with open(self.config_file, "w") as f:
            parser.write(f)

    def _env(self):
        return common.child_env(TMPDIR=self.tempdir)

    def start(self, timeout=60, headers=None):
        """Start the process and wait until the API answers.

        :param headers: further headers of the readiness probe (an
            ``X-Auth-Token`` when Ironic runs behind Keystone).
        :returns: seconds from spawn to the first successful API answer.
        :raises RuntimeError: with the log tail when Ironic exits or does
            not answer within ``timeout`` seconds.
        """
        began = time.monotonic()
        if self.http_server is None:
            self.http_server = images.ImageServer(self.http_root,
                                                  port=self.http_port)
        log = open(self.stdout_file, "ab")
        self.process = subprocess.Popen(
            [_bin("ironic"), "--config-file", self.config_file],
            stdout=log, stderr=subprocess.STDOUT, env=self._env(),
            start_new_session=True)
        log.close()
        while time.monotonic() - began < timeout:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"ironic exited with {self.process.returncode}:\n"
                    + self.log_tail())
            try:
                rsp = requests.get(
                    f"{self.url}/v1/drivers", timeout=1,
                    headers={"X-OpenStack-Ironic-API-Version": API_VERSION,
                             **(headers or {})})
                if rsp.status_code == 200 and rsp.json().get("drivers"):
                    self.start_seconds = time.monotonic() - began
                    return self.start_seconds
            except requests.RequestException:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError("ironic did not answer in time:\n"
                           + self.log_tail())

    def stop(self, sig=signal.SIGTERM):
        """Stop the process (and its children) and wait for it; the HTTP
        server of ``http_root`` stops too."""
        if self.http_server is not None:
            self.http_server.stop()
            self.http_server = None
        if self.process is None or self.process.poll() is not None:
            return
        try:
            os.killpg(self.process.pid, sig)
        except ProcessLookupError:
            return
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def restart(self):
        """Kill the conductor hard (no clean shutdown) and start it again."""
        self.stop(signal.SIGKILL)
        return self.start()

    def log_tail(self, lines=200):
        """The last lines of the Ironic log, for failure reports."""
        return common.log_tail(self.log_file, self.stdout_file, lines=lines)

    def connection(self):
        """An openstacksdk connection to this Ironic (no auth)."""
        import openstack

        return openstack.connection.Connection(
            auth_type="none", baremetal_endpoint_override=self.url + "/",
            baremetal_api_version=API_VERSION)


def enroll(baremetal, bmc, system=1, name=None, **fields):
    """Enroll an accel-redfish node pointing at an emulator system.

    :param baremetal: openstacksdk's baremetal proxy.
    :param bmc: a :class:`~accel_tools.embedded.bmc.BmcEmulator`.
    :param fields: further node fields (they override the interfaces).
    :returns: the openstacksdk Node.
    """
    driver_info = {
        "redfish_address": bmc.url,
        "redfish_system_id": bmc.system_uri(system),
        "redfish_username": bmc.username,
        "redfish_password": bmc.password,
        "redfish_verify_ca": False,
        "redfish_auth_type": "basic",
    }
    return baremetal.create_node(driver="accel-redfish", name=name,
                                 driver_info=driver_info,
                                 **dict(NODE_INTERFACES, **fields))


def wait_for_state(baremetal, node, states, timeout=60):
    """Wait until the node's provision state is one of ``states``.

    :returns: the node as last read.
    :raises: AssertionError naming the state and last_error on timeout.
    """
    states = {states} if isinstance(states, str) else set(states)
    deadline = time.monotonic() + timeout
    while True:
        current = baremetal.get_node(node.id if hasattr(node, "id")
                                     else node)
        if current.provision_state in states and not current.reservation:
            return current
        if time.monotonic() > deadline:
            raise AssertionError(
                f"node {current.id} is {current.provision_state} (wanted "
                f"{sorted(states)}); last_error: {current.last_error}")
        time.sleep(0.2)


def manage(baremetal, node, timeout=60):
    """``manage`` a node (runs verify steps) and wait for the outcome."""
    baremetal.set_node_provision_state(node, "manage")
    return wait_for_state(baremetal, node, {"manageable", "enroll"},
                          timeout)


def clean(baremetal, node, steps, timeout=60):
    """Run a manual clean and wait for ``manageable`` or ``clean failed``."""
    baremetal.set_node_provision_state(node, "clean", clean_steps=steps)
    return wait_for_state(baremetal, node, {"manageable", "clean failed"},
                          timeout)
