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

"""An API worker that starts while the database is down answers 503 with
``Retry-After`` from its first request, and serves once the database is
back, without a restart.

gunicorn builds the application in each worker at its first request: a
fresh worker, a restarted API or a worker gunicorn just replaced. The
database is a real MariaDB or PostgreSQL behind a loopback TCP proxy
(:mod:`tests.fixtures.tcp_proxy`) that is cut before gunicorn starts.
"""

import json
import time

import pytest
import requests

from tests.fixtures import cyborg_server
from tests.fixtures import databases
from tests.fixtures import tcp_proxy

SERVERS = [pytest.param("mariadb", marks=pytest.mark.mariadb),
           pytest.param("postgresql", marks=pytest.mark.postgresql)]

#: What a request may take while the database is down: far less than
#: oslo.db's connect-at-start retries (max_retries x retry_interval).
QUICK = 5.0


@pytest.mark.parametrize("backend", SERVERS)
def test_worker_started_without_database_answers_503_then_serves(
        backend, tmp_path):
    with databases.database(backend, tmp_path) as url, \
            tcp_proxy.proxied(url) as (proxy, proxied_url):
        server = cyborg_server.CyborgServer(
            tmp_path / "api", db_url=proxied_url, workers=1,
            # NOTE(cyborg_lite): oslo.db's own defaults: an API worker
            # must not wait for them at its first request.
            options={"database": {"max_retries": "10",
                                  "retry_interval": "10"}})
        server.prepare()
        proxy.cut()
        server.start()
        try:
            answers = {}
            for path in ("/healthcheck", "/v2/device_profiles",
                         "/v2/accelerator_requests"):
                started = time.monotonic()
                answers[path] = requests.get(server.url + path, timeout=60)
                answers[path].elapsed_s = time.monotonic() - started

            proxy.restore()
            deadline = time.monotonic() + 30
            while True:
                served = requests.get(server.url + "/v2/device_profiles",
                                      timeout=30)
                if served.status_code == 200 or time.monotonic() > deadline:
                    break
                time.sleep(0.5)
            healthy = requests.get(server.url + "/healthcheck", timeout=30)
        finally:
            server.stop()

    for path, answer in answers.items():
        assert answer.status_code == 503, (path, answer.text, server.log())
        assert answer.elapsed_s < QUICK, (path, answer.elapsed_s)
    for path in ("/v2/device_profiles", "/v2/accelerator_requests"):
        assert answers[path].headers["Retry-After"] == "5"
        fault = json.loads(answers[path].json()["error_message"])
        assert fault["faultstring"].startswith(
            "The database is unavailable"), fault
    assert "Traceback" not in answers["/healthcheck"].text
    assert served.status_code == 200, (served.text, server.log())
    assert healthy.status_code == 200, healthy.text
