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

"""A BMC that replays recorded Redfish documents, for unit tests.

The documents in ``data/`` were recorded from the project's BMC emulator
(``bmc_default.json``: path -> document). Tests change what a path answers
with :meth:`RecordedBMC.answer` and read what was asked from
:attr:`RecordedBMC.requests`.
"""

import http.server
import json
import os
import threading
import types

import pytest

DATA = os.path.join(os.path.dirname(__file__), "data")


def load(name):
    """A recorded data file from ``data/``."""
    with open(os.path.join(DATA, name)) as f:
        return json.load(f)


class RecordedBMC:
    """A threaded HTTP server answering from a path -> document dict."""

    def __init__(self, documents=None):
        self.documents = dict(documents or load("bmc_default.json"))
        self.requests = []
        self._answers = {}
        self._lock = threading.Lock()
        bmc = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _reply(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                path = self.path.split("?")[0]
                with bmc._lock:
                    bmc.requests.append(
                        (self.command, path,
                         json.loads(body) if body else None))
                    queue = bmc._answers.get((self.command, path.rstrip("/")))
                    if queue:
                        status, headers, doc = (queue.pop(0) if len(queue) > 1
                                                else queue[0])
                    elif self.command == "GET":
                        doc = (bmc.documents.get(path)
                               or bmc.documents.get(path.rstrip("/"))
                               or bmc.documents.get(path.rstrip("/") + "/"))
                        status, headers = (200, {}) if doc else (404, {})
                    else:
                        status, headers, doc = 405, {}, None
                payload = json.dumps(doc or {}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _reply

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                                      Handler)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever,
                                        args=(0.05,),
                                        daemon=True)
        self._thread.start()

    def answer(self, method, path, *answers):
        """Queue ``(status, headers, document)`` answers for a path.

        Answers are used in order; the last one repeats.
        """
        with self._lock:
            self._answers[(method, path.rstrip("/"))] = list(answers)

    def clear_answers(self):
        """Back to answering from the documents."""
        with self._lock:
            self._answers.clear()

    def posts(self):
        """The POST requests seen, as (path, body)."""
        return [(p, b) for m, p, b in self.requests if m == "POST"]

    def stop(self):
        """Shut the server down."""
        self.server.shutdown()
        self.server.server_close()


def node_for(bmc, system="/redfish/v1/Systems/1", **fields):
    """A node-like object the gateway can read driver_info from."""
    values = {
        "uuid": "1be26c0b-03f2-4d2e-ae87-c02d7f33c123",
        "id": 1,
        "name": "compute-1.example.org",
        "driver": "accel-redfish",
        "driver_info": {"redfish_address": bmc.url,
                        "redfish_system_id": system,
                        "redfish_username": "admin",
                        "redfish_password": "password",
                        "redfish_auth_type": "basic",
                        "redfish_verify_ca": False},
        "extra": {},
        "instance_info": {},
    }
    values.update(fields)
    return types.SimpleNamespace(**values)


@pytest.fixture
def recorded_bmc():
    """A RecordedBMC with fast gateway retries; stopped after the test."""
    from ironic.conf import CONF

    from ironic_accel.redfish import client as redfish_client

    CONF.set_override("bmc_retries", 2, group="ironic_accel")
    CONF.set_override("bmc_retry_interval", 0, group="ironic_accel")
    redfish_client.clear_cache()
    bmc = RecordedBMC()
    yield bmc
    bmc.stop()
    redfish_client.clear_cache()
    CONF.clear_override("bmc_retries", group="ironic_accel")
    CONF.clear_override("bmc_retry_interval", group="ironic_accel")
