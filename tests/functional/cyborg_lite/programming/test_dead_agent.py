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

"""A compute host's agent dies: gunicorn with 2 workers over MariaDB, the
agent as a process behind the real RabbitMQ, SIGKILLed. Binds needing it
are refused at once instead of holding the workers for the image check's
timeout, every other request stays fast, ``/healthcheck`` stays 200 and
names the host, and the restarted agent is used again without restarting
the API."""

import concurrent.futures
import os
import signal
import time
import uuid

import pytest
import requests

from cyborg_lite.db import engine as db_engine
from cyborg_lite.inventory import apply as inventory_apply
from tests.fixtures import nova_standin as nova_standin_mod
from tests.fixtures import polling
from tests.fixtures.cyborg_server import CyborgServer
from tests.fixtures.cyborg_server import mariadb_database
from tests.functional.cyborg_lite.programming import env
from tests.functional.cyborg_lite.programming import test_rabbitmq

pytestmark = [pytest.mark.rabbitmq, pytest.mark.mariadb]

IMAGE_CHECK_TIMEOUT = 10
#: what a request that waits for nothing may take on a busy test machine.
FAST = 3.0


@pytest.fixture
def api(tmp_path, rabbitmq_url, placement_server):
    host = test_rabbitmq.Host(tmp_path / "host", rabbitmq_url, 0.5)
    placement = test_rabbitmq._report(placement_server, host.document)
    nova = nova_standin_mod.NovaStandin().start()
    database = mariadb_database(prefix="cyborg_dead")
    db_url = database.__enter__()
    options = host.server_options(placement_server.url)
    options["programming"].update({
        "image_check_timeout": IMAGE_CHECK_TIMEOUT,
        "agent_waiting_limit": 1, "agent_probe_interval": 1})
    server = CyborgServer(tmp_path / "api", db_url=db_url,
                          inventories=[host.document], workers=2,
                          nova_url=nova.endpoint, options=options)
    server.write_config()
    db = db_engine.Database(db_url)
    db.sync()
    inventory_apply.apply_document(db, host.document)
    db.dispose()
    try:
        host.start()
        server.start()
        yield server, host, placement
    finally:
        if server.process and server.process.poll() is None:
            os.killpg(server.process.pid, signal.SIGKILL)
            server.process.wait(10)
        host.cleanup()
        nova.stop()
        database.__exit__(None, None, None)


def _timed(call):
    started = time.monotonic()
    result = call()
    return result, time.monotonic() - started


def _health(url, detailed=False):
    headers = {"Accept": "application/json"}
    if detailed:
        headers.update(env.ADMIN)
    answer = requests.get(url + "/healthcheck", headers=headers, timeout=60)
    body = answer.json()
    details = body["reasons"][0]["details"] if detailed else ""
    return answer.status_code, details


def _others(url, profile):
    """/healthcheck, an ARQ create and its resolve, each timed."""
    client = env.Client(url)
    timings = {}
    (status, _), timings["healthcheck"] = _timed(lambda: _health(url))
    assert status == 200
    (arq,), timings["create"] = _timed(lambda: client.arqs(profile))
    _, timings["resolve"] = _timed(lambda: client.arq(arq))
    return timings


def _bind(url, rp, host):
    client = env.Client(url)
    (arq,) = client.arqs(client.profile("nlb0"))
    (status, body), seconds = _timed(
        lambda: client.bind([arq], rp, str(uuid.uuid4()), host.name))
    return status, body, seconds, arq


def test_dead_agent_stalls_nothing_and_is_named(api):
    server, host, _ = api
    url, client = server.url, env.Client(server.url)
    plain = client.profile()
    host.process.kill()

    with concurrent.futures.ThreadPoolExecutor(12) as pool:
        # The first bind after the death waits for the image check's
        # timeout: nothing told the API yet.
        first = pool.submit(_bind, url, host.rps[0], host)
        time.sleep(1.5)
        # Its call has waited past agent_waiting_limit: further binds for
        # the host are refused at once, all other requests are served.
        binds = [pool.submit(_bind, url, rp, host) for rp in host.rps[1:]]
        others = [pool.submit(_others, url, plain) for _ in range(4)]
        for bind in binds:
            status, body, seconds, _ = bind.result()
            assert status == 409, body
            assert seconds < FAST, (seconds, body)
            assert "has not answered a call sent at" in body[
                "error_message"], body
        for other in others:
            for what, seconds in other.result().items():
                assert seconds < FAST, (what, seconds)
        status, body, seconds, arq = first.result()
    assert status == 409, body
    assert IMAGE_CHECK_TIMEOUT - 1 < seconds < IMAGE_CHECK_TIMEOUT + 5
    assert "did not answer find_image" in body["error_message"], body

    # The record is shared: every worker refuses at once, /healthcheck
    # stays 200 and names the host, /metrics counts it.
    for rp in host.rps:
        status, body, seconds, _ = _bind(url, rp, host)
        assert status == 409, body
        assert seconds < FAST, seconds
        assert f"the agent of host {host.name} has not answered since" in \
            body["error_message"], body
    for _ in range(4):
        (status, details), seconds = _timed(lambda: _health(url, True))
        assert status == 200 and seconds < FAST, (status, seconds)
        (line,) = [d for d in details.splitlines()
                   if d.startswith("agents not answering: ")]
        assert line.startswith(f"agents not answering: {host.name} "
                               f"(since "), details
        assert "find_image" in line, line
        scraped = requests.get(url + "/metrics", headers=env.ADMIN,
                               timeout=60).text
        assert "\ncyborg_lite_agents_not_answering 1.0\n" in scraped

    # The agent comes back: a background probe finds it within seconds
    # and binds program again, with no API restart.
    host.start()
    polling.wait_for(
        lambda: "agents not answering: none" in _health(url, True)[1],
        timeout=15, interval=0.2, what="a probe to find the agent again")
    status, body, seconds, arq = _bind(url, host.rps[0], host)
    assert status == 202, body
    assert client.wait_resolved(arq)["state"] == "Bound"
    assert host.sim(0)["function_id"] == "nlb0"
    scraped = requests.get(url + "/metrics", headers=env.ADMIN,
                           timeout=60).text
    assert "\ncyborg_lite_agents_not_answering 0.0\n" in scraped
