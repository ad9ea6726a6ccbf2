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

"""The project's Redfish BMC emulator as a subprocess.

:class:`BmcEmulator` runs ``python -m accel_tools.emulator.main`` on a free
port with its state file and log in a work directory, Basic/session auth on
by default, and offers the emulator's control API (faults, device
inventories, recorded requests) to tests and the demo::

    bmc = BmcEmulator(workdir).start()
    node_driver_info = bmc.driver_info()
    ...
    bmc.stop()
"""

import json
import pathlib
import subprocess
import sys
import time

import requests

from accel_tools.embedded import common

USERNAME = "admin"
PASSWORD = "emulator-password"


class BmcEmulator:
    """A running emulator subprocess.

    :param workdir: directory for the state file and the log.
    :param systems: number of systems.
    :param username: Basic/session user (None: no authentication).
    :param password: its password.
    :param devices: optional ``{system id: [device, ...]}`` written to the
        state file before the first start (see the emulator's README.rst).
    :param profile: the emulator's ``--profile`` (how its UpdateService
        takes images).
    """

    def __init__(self, workdir, systems=1, username=USERNAME,
                 password=PASSWORD, devices=None, profile="simple"):
        self.workdir = pathlib.Path(workdir)
        self.state_file = self.workdir / "bmc-state.json"
        self.log_file = self.workdir / "bmc.log"
        self.systems = systems
        self.profile = profile
        self.username = username
        self.password = password
        self.port = common.free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.process = None
        self._auths = []
        if devices:
            self.write_devices(devices)

    def write_devices(self, devices):
        """Seed the state file with device inventories (emulator stopped)."""
        doc = {"systems": {sid: {"devices": devs}
                           for sid, devs in devices.items()}}
        self.state_file.write_text(json.dumps(doc))

    def start(self, timeout=60):
        """Start the subprocess and wait until it answers.

        :returns: self.
        :raises RuntimeError: with the emulator's log when it exits or does
            not answer within ``timeout`` seconds.
        """
        cmd = [sys.executable, "-m", "accel_tools.emulator.main",
               "--host", "127.0.0.1", "--port", str(self.port),
               "--systems", str(self.systems),
               "--state-file", str(self.state_file),
               "--profile", self.profile]
        if self.username is not None:
            cmd += ["--username", self.username, "--password", self.password]
        with open(self.log_file, "ab") as log:
            self.process = subprocess.Popen(
                cmd, stdout=log, stderr=subprocess.STDOUT,
                env=common.child_env())
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError("BMC emulator exited with %s:\n%s"
                                   % (self.process.returncode, self.log()))
            try:
                if requests.get(self.url + "/emulator/faults",
                                timeout=1).ok:
                    return self
            except requests.ConnectionError:
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("BMC emulator did not answer within %ss:\n%s"
                           % (timeout, self.log()))

    def stop(self):
        """Stop the subprocess (SIGTERM, then SIGKILL)."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self._close_sessions()
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        self.process = None

    def restart(self):
        """Kill the emulator and start it again on the same port and state."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(5)
        self.process = None
        return self.start()

    def log(self):
        """The emulator's output so far."""
        try:
            return self.log_file.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def log_tail(self, lines=40):
        """The last lines of the emulator's output, for failure reports."""
        return common.log_tail(self.log_file, lines=lines)

    def system_uri(self, n=1):
        """The Redfish URI of system ``n``, e.g. ``/redfish/v1/Systems/1``."""
        return "/redfish/v1/Systems/%s" % n

    def _call(self, method, path, **kwargs):
        rsp = requests.request(method, self.url + path, timeout=10, **kwargs)
        rsp.raise_for_status()
        return rsp.json() if rsp.content else None

    def set_faults(self, **faults):
        """Inject faults: task_exception, version_unchanged,
        unavailable_seconds, task_seconds. Returns the faults in force."""
        return self._call("PUT", "/emulator/faults", json=faults)

    def set_devices(self, devices, system="1"):
        """Replace the device inventory of a system (running emulator)."""
        return self._call("PUT", "/emulator/systems/%s/devices" % system,
                          json=devices)

    def requests(self):
        """Modifying /redfish requests received: [{method, path, body,
        status}]."""
        return self._call("GET", "/emulator/requests")

    def clear_requests(self):
        """Forget the recorded requests."""
        self._call("DELETE", "/emulator/requests")

    def state(self):
        """The emulator's whole state document."""
        return self._call("GET", "/emulator/state")

    def sushy(self):
        """A sushy client logged in to this emulator (closed by
        :meth:`stop`)."""
        import sushy

        auth = sushy.auth.SessionOrBasicAuth(self.username, self.password)
        self._auths.append(auth)
        return sushy.Sushy(self.url + "/redfish/v1", auth=auth)

    def _close_sessions(self):
        # NOTE(emulator): a Sushy object closes its session when garbage
        # collected; against a stopped emulator that costs seconds of retries.
        for auth in self._auths:
            try:
                auth.close()
            except Exception:
                pass
        self._auths = []

    def driver_info(self, n=1):
        """Ironic ``driver_info`` for a redfish node pointing at system
        ``n``."""
        return {"redfish_address": self.url,
                "redfish_system_id": self.system_uri(n),
                "redfish_username": self.username,
                "redfish_password": self.password,
                "redfish_verify_ca": False}
