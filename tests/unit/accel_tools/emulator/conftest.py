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


"""In-process emulator fixtures: the WSGI app served from a thread.

A controllable clock makes task timing deterministic; it starts at the real
time so Retry-After dates stay meaningful to sushy.
"""

import threading
import time

import pytest
import sushy
from werkzeug import serving

from accel_tools.emulator import app as emulator_app

USERNAME = "admin"
PASSWORD = "secret"


class Clock:
    """A clock that only moves when told to."""

    def __init__(self):
        self.now = time.time()

    def __call__(self):
        return self.now

    def advance(self, seconds):
        self.now += seconds


class InProcessEmulator:
    """The emulator app served by werkzeug in a daemon thread."""

    def __init__(self, state_file, clock=time.time, **kwargs):
        self.state_file = state_file
        self.app = emulator_app.create_app(state_file, clock=clock, **kwargs)
        self.state = self.app.extensions["ironic_accel_emulator"]
        self.username = kwargs.get("username")
        self.password = kwargs.get("password")
        self._server = serving.make_server("127.0.0.1", 0, self.app, threaded=True)
        self.url = "http://127.0.0.1:%d" % self._server.port
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,),
                                        daemon=True)
        self._thread.start()
        self._auths = []

    def sushy(self):
        """A sushy client; its session is closed by :meth:`stop`."""
        # NOTE(emulator): a Sushy object closes its session when garbage
        # collected; against a stopped server that costs seconds of retries,
        # so sessions are closed while the server still runs.
        auth = sushy.auth.SessionOrBasicAuth(self.username, self.password)
        self._auths.append(auth)
        return sushy.Sushy(self.url + "/redfish/v1", auth=auth)

    def stop(self):
        for auth in self._auths:
            auth.close()
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def start_emulator(tmp_path):
    """Factory: start an in-process emulator; all are stopped at teardown."""
    started = []

    def start(state_file=None, **kwargs):
        kwargs.setdefault("username", USERNAME)
        kwargs.setdefault("password", PASSWORD)
        emulator = InProcessEmulator(state_file or tmp_path / "state.json", **kwargs)
        started.append(emulator)
        return emulator

    yield start
    for emulator in started:
        emulator.stop()


@pytest.fixture
def emulator(start_emulator, clock):
    """An in-process emulator with auth, driven by the ``clock`` fixture."""
    return start_emulator(clock=clock)
