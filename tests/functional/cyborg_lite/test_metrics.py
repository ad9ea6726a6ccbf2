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

"""``GET /metrics``: what Prometheus scrapes from the API.

A real cyborg_lite under gunicorn with two workers and prometheus-client's
multiprocess directory, as a deployment runs it: binds and a programming
that fails, then scrapes parsed with prometheus-client's own parser. Who
may scrape (noauth, and keystonemiddleware with its token fixture) and a
database that cannot be read are checked on the app itself.
"""

import os
import socket
import time
import uuid

from keystonemiddleware import fixture as ks_fixture
from prometheus_client import parser
import pytest
import requests
import sqlalchemy as sa

from cyborg_lite.agent.drivers import sim
from cyborg_lite.api import app as app_mod
from cyborg_lite.db import engine as db_engine
from tests.fixtures.cyborg import make_conf
from tests.fixtures.cyborg import make_cyborg
from tests.fixtures.cyborg_server import make_inventory
from tests.functional.cyborg_lite.programming import env


def _samples(text):
    """``{(name, (label pairs)): value}`` of an exposition."""
    found = {}
    for family in parser.text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = (
                sample.value)
    return found


def _value(samples, name, **labels):
    return samples.get((name, tuple(sorted(labels.items()))))


def _closed_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _scrape(url):
    # NOTE(tests): a new connection each time, so either worker answers.
    answer = requests.get(url + "/metrics", headers=env.ADMIN, timeout=30)
    assert answer.status_code == 200, answer.text
    return _samples(answer.text)


def test_scrape_counts_binds_programming_and_states_across_workers(
        cyborg_server_factory, tmp_path, monkeypatch):
    multiproc = tmp_path / "prometheus"
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(multiproc))
    document = make_inventory(handles_per_region=(2, 2))
    state_dir = tmp_path / "sim"
    state_dir.mkdir()
    server = cyborg_server_factory(
        inventories=[document], workers=2,
        # NOTE(tests): a Nova nobody listens on, so the failed
        # programming's event stays undelivered (the resend backlog).
        nova_url=f"http://127.0.0.1:{_closed_port()}",
        options={
            "agent": {
                "sim_state_dir": state_dir,
                "sim_inventory_file": env.write_document(
                    tmp_path / "inventory.json", document),
                "image_catalog_dir": env.make_catalog(tmp_path / "cat"),
                "sim_program_seconds": 0.2},
            "programming": {"reconcile_on_start": False,
                            "reconcile_interval": 0},
            "nova": {"notify_retries": 0},
        })
    client = env.Client(server.url)
    host = document["host"]
    ready_rp, failing_rp = (r["rp_uuid"]
                            for r in document["devices"][0]["regions"])

    # An instant bind (no function asked) and a bind whose programming
    # the card refuses.
    instant = client.arqs(client.profile())
    status, body = client.bind(instant, ready_rp, str(uuid.uuid4()), host)
    assert status == 202, body
    (state_dir / sim.FAULT_FILE).write_text("bitstream rejected")
    programmed = client.arqs(client.profile("nlb0"))
    status, body = client.bind(programmed, failing_rp, str(uuid.uuid4()),
                               host)
    assert status == 202, body
    assert client.wait_resolved(programmed[0])["state"] == "BindFailed"
    # The region in error refuses the next bind: a 409.
    refused = client.arqs(client.profile("nlb0"))
    status, body = client.bind(refused, failing_rp, str(uuid.uuid4()), host)
    assert status == 409, body

    deadline = time.monotonic() + 30
    while True:
        samples = _scrape(server.url)
        failed_events = _value(samples,
                               "cyborg_lite_nova_events_undelivered",
                               state="failed")
        if failed_events == 1 or time.monotonic() > deadline:
            break
        time.sleep(0.2)

    assert _value(samples, "cyborg_lite_database_up") == 1
    assert {state: _value(samples, "cyborg_lite_regions", state=state)
            for state in ("ready", "programming", "error")} == {
        "ready": 1, "programming": 0, "error": 1}
    assert _value(samples, "cyborg_lite_arqs", state="Bound") == 1
    assert _value(samples, "cyborg_lite_arqs", state="BindFailed") == 2
    assert _value(samples, "cyborg_lite_arqs", state="Initial") == 0
    assert failed_events == 1
    assert _value(samples, "cyborg_lite_nova_events_undelivered",
                  state="pending") == 0
    # The binds were answered by either worker; the multiprocess
    # directory sums both.
    binds = "cyborg_lite_bind_duration_seconds_count"
    assert _value(samples, binds, status="202") == 2
    assert _value(samples, binds, status="409") == 1
    assert _value(samples, "cyborg_lite_bind_duration_seconds_bucket",
                  status="202", le="+Inf") == 2
    programming = "cyborg_lite_programming_duration_seconds_count"
    assert _value(samples, programming, outcome="failed") == 1
    assert _value(samples, programming, outcome="succeeded") is None
    assert _value(samples, "cyborg_lite_programming_duration_seconds_sum",
                  outcome="failed") >= 0.2
    assert any(name.startswith("counter_") or name.startswith("histogram_")
               for name in os.listdir(multiproc))

    # Any worker answers the same: the states come from the database.
    states = {key: value for key, value in samples.items()
              if key[0] in ("cyborg_lite_regions", "cyborg_lite_arqs")}
    for _ in range(6):
        again = _scrape(server.url)
        assert {key: again[key] for key in states} == states
        assert _value(again, binds, status="202") == 2


@pytest.fixture
def api(tmp_path):
    """Build the app with ``[metrics]`` options: ``api(**options)``."""
    def build(**options):
        conf = make_conf(tmp_path, **{f"metrics.{name}": value
                                      for name, value in options.items()})
        conf.set_override("connection",
                          f"sqlite:///{tmp_path}/{uuid.uuid4().hex}.sqlite",
                          group="database")
        db = db_engine.Database.from_conf(conf)
        db.sync()
        return app_mod.create_app(conf, db=db, programmer=None).test_client()
    return build


READER = {"X-Project-Id": "p1", "X-User-Id": "u", "X-Roles": "reader"}


def test_only_admins_scrape_by_default(api):
    client = api()

    assert client.get("/metrics", headers=env.ADMIN).status_code == 200
    refused = client.get("/metrics", headers=READER)
    assert refused.status_code == 403
    assert "cyborg:metrics:get" in refused.get_json()["error_message"]


def test_allowed_network_scrapes_without_a_role(api):
    client = api(allowed_source_ranges=["10.0.5.0/24"])

    inside = client.get("/metrics", headers=READER,
                        environ_base={"REMOTE_ADDR": "10.0.5.7"})
    outside = client.get("/metrics", headers=READER,
                         environ_base={"REMOTE_ADDR": "10.0.6.7"})
    proxied = client.get("/metrics", environ_base={
        "REMOTE_ADDR": "10.0.5.7"},
        headers=dict(READER, **{"X-Forwarded-For": "203.0.113.9"}))

    assert inside.status_code == 200
    assert inside.headers["Content-Type"].startswith("text/plain")
    assert "cyborg_lite_regions" in inside.get_data(as_text=True)
    assert (outside.status_code, proxied.status_code) == (403, 403)


def test_only_get_is_allowed(api):
    answer = api().post("/metrics", headers=env.ADMIN)

    assert answer.status_code == 405
    assert answer.headers["Allow"] == "GET"


def test_disabled_endpoint_is_not_found(api):
    assert api(enabled=False).get("/metrics",
                                  headers=env.ADMIN).status_code == 404


def test_a_range_that_is_not_a_network_refuses_to_start(api):
    with pytest.raises(ValueError,
                       match=r"allowed_source_ranges: '10\.0\.5' is not a "
                             r"network"):
        api(allowed_source_ranges=["10.0.5"])


def test_keystone_scrape_needs_an_admin_token_or_an_allowed_network(
        tmp_path):
    auth = ks_fixture.AuthTokenFixture()
    auth.setUp()
    try:
        cyborg = make_cyborg(
            tmp_path, auth_strategy="keystone",
            **{"keystone_authtoken.www_authenticate_uri":
               "http://keystone.example.org/identity",
               "metrics.allowed_source_ranges": ["10.0.5.0/24"]})
        tokens = {}
        for name, roles in (("member", ["member", "reader"]),
                            ("admin", ["admin", "member", "reader"])):
            tokens[name] = uuid.uuid4().hex
            auth.add_token_data(token_id=tokens[name], project_id="p1",
                                user_id=f"u-{name}", role_list=roles)
        outside = {"REMOTE_ADDR": "192.0.2.1"}

        def scrape(token=None, source=outside):
            headers = {"X-Auth-Token": token} if token else {}
            return cyborg.client.get("/metrics", headers=headers,
                                     environ_base=source).status_code

        assert scrape() == 401
        assert scrape(tokens["member"]) == 403
        assert scrape(tokens["admin"]) == 200
        assert scrape(source={"REMOTE_ADDR": "10.0.5.7"}) == 200
    finally:
        auth.cleanUp()


def test_unreadable_database_is_a_metric_not_an_error(api, tmp_path):
    client = api()
    services = client.application.extensions["cyborg_lite"]
    # NOTE(tests): the tables vanish (a restore gone wrong): the scrape
    # still answers, and says so.
    services.db.run(lambda s: s.execute(sa.text("DROP TABLE arqs")))

    answer = client.get("/metrics", headers=env.ADMIN)

    samples = _samples(answer.get_data(as_text=True))
    assert answer.status_code == 200
    assert _value(samples, "cyborg_lite_database_up") == 0
    assert _value(samples, "cyborg_lite_regions", state="ready") is None
