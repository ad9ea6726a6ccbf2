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

"""ARQs Nova forgets: the reclaim pass deletes the bound ARQs of an
instance Nova answers 404 for, freeing their handles, and keeps every other
ARQ (a live instance, Nova failing or unreachable, credentials that cannot
see every project). Nova here is a small HTTP server answering the two
reads the pass makes; the real Nova's case is in
tests/functional/e2e/test_real_neutron.py."""

import contextlib
import http.server
import json
import logging
import socket
import threading
import types
import uuid

import sqlalchemy as sa

from cyborg_lite import periodics
from cyborg_lite import reclaim
from cyborg_lite.db import models
from tests.fixtures.cyborg import FPGA_REGION0_RP
from tests.fixtures.cyborg import make_cyborg


class _Nova(http.server.BaseHTTPRequestHandler):
    """``GET /v2.1/servers?all_tenants=1`` answers ``server.list_status``;
    ``GET /v2.1/servers/<uuid>`` 200 for ``server.servers``, else 404,
    or ``server.show_fail`` (a status) when set."""

    def _reply(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        nova = self.server
        self.server.seen.append(self.path)
        path = self.path.split("?", 1)[0].rstrip("/")
        if path == "/v2.1/servers":
            self._reply(nova.list_status, {"servers": []})
        elif nova.show_fail:
            self._reply(nova.show_fail, {"computeFault": {
                "code": nova.show_fail}})
        elif path.rsplit("/", 1)[-1] in nova.servers:
            self._reply(200, {"server": {"id": path.rsplit("/", 1)[-1]}})
        else:
            self._reply(404, {"itemNotFound": {"code": 404}})

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def _nova():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Nova)
    server.servers, server.seen = set(), []
    server.list_status, server.show_fail = 200, None
    server.endpoint = f"http://127.0.0.1:{server.server_address[1]}/v2.1"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _cyborg(tmp_path, endpoint, db_url=None, **overrides):
    return make_cyborg(tmp_path, db_url=db_url, **{
        "nova.auth_type": "none", "nova.endpoint_override": endpoint,
        "nova.notify_retries": 0, **overrides})


def _bound(cyborg):
    """A bound ARQ of a new instance: (arq uuid, instance uuid)."""
    profile = cyborg.create_profile([{"resources:FPGA": "1"}])
    arq = cyborg.create_arqs(profile["name"])[0]["uuid"]
    instance = str(uuid.uuid4())
    assert cyborg.bind([arq], FPGA_REGION0_RP, instance).status_code == 202
    return arq, instance


def _arqs(cyborg):
    return cyborg.db.read(lambda s: sorted(s.execute(
        sa.select(models.ARQ.uuid, models.ARQ.state)).all()))


def _handles_in_use(cyborg):
    return cyborg.db.read(lambda s: s.execute(
        sa.select(sa.func.count()).select_from(models.AttachHandle)
        .where(models.AttachHandle.in_use)).scalar())


def test_arq_of_an_instance_nova_no_longer_has_is_reclaimed(
        tmp_path, caplog, db_url):
    with _nova() as nova:
        cyborg = _cyborg(tmp_path, nova.endpoint, db_url)
        live_arq, live = _bound(cyborg)
        gone_arq, gone = _bound(cyborg)
        nova.servers.add(live)
        assert _handles_in_use(cyborg) == 2
        reclaimer = reclaim.Reclaimer(cyborg.conf, cyborg.db)
        caplog.set_level(logging.WARNING, logger="cyborg_lite.reclaim")

        assert reclaimer.run_once() == [gone_arq]

        assert _arqs(cyborg) == [(live_arq, "Bound")]
        assert _handles_in_use(cyborg) == 1
        assert reclaimer.reclaimed == 1
        assert any(gone_arq in r.getMessage() and gone in r.getMessage()
                   for r in caplog.records)
        assert reclaimer.run_once() == []
    cyborg.db.dispose()


def test_a_pass_without_bound_arqs_never_calls_nova(tmp_path):
    with _nova() as nova:
        cyborg = _cyborg(tmp_path, nova.endpoint)
        profile = cyborg.create_profile([{"resources:FPGA": "1"}])
        cyborg.create_arqs(profile["name"])
        assert reclaim.Reclaimer(cyborg.conf, cyborg.db).run_once() == []
        assert nova.seen == []
    cyborg.db.dispose()


def test_nova_failing_or_unreachable_reclaims_nothing(tmp_path):
    with _nova() as nova:
        cyborg = _cyborg(tmp_path, nova.endpoint)
        arq, _ = _bound(cyborg)
        nova.show_fail = 500
        assert reclaim.Reclaimer(cyborg.conf, cyborg.db).run_once() == []
        nova.show_fail = 503
        assert reclaim.Reclaimer(cyborg.conf, cyborg.db).run_once() == []
    assert _arqs(cyborg) == [(arq, "Bound")]
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}/v2.1"
    cyborg.conf.set_override("endpoint_override", closed, group="nova")
    assert reclaim.Reclaimer(cyborg.conf, cyborg.db).run_once() == []
    assert _arqs(cyborg) == [(arq, "Bound")]
    assert _handles_in_use(cyborg) == 1
    cyborg.db.dispose()


def test_credentials_that_cannot_see_every_project_reclaim_nothing(
        tmp_path, caplog):
    # NOTE(tests): such a user gets 404 for another project's live server.
    with _nova() as nova:
        cyborg = _cyborg(tmp_path, nova.endpoint)
        arq, instance = _bound(cyborg)
        nova.list_status = 403
        assert reclaim.Reclaimer(cyborg.conf, cyborg.db).run_once() == []
        assert not any(instance in seen for seen in nova.seen)
    assert _arqs(cyborg) == [(arq, "Bound")]
    assert any("admin role" in r.getMessage() for r in caplog.records)
    cyborg.db.dispose()


def test_a_pass_asks_about_a_bounded_batch_and_the_next_goes_on(tmp_path):
    with _nova() as nova:
        cyborg = _cyborg(tmp_path, nova.endpoint,
                         **{"nova.reclaim_batch": 1})
        first, _ = _bound(cyborg)
        second, _ = _bound(cyborg)
        reclaimer = reclaim.Reclaimer(cyborg.conf, cyborg.db)
        done = reclaimer.run_once()
        assert len(done) == 1
        assert len(_arqs(cyborg)) == 1
        done += reclaimer.run_once()
    assert sorted(done) == sorted([first, second])
    assert reclaimer.reclaimed == 2
    assert _handles_in_use(cyborg) == 0
    cyborg.db.dispose()


#: what Periodics.tasks reads of a programmer.
_PROGRAMMER = types.SimpleNamespace(renew_leases=lambda: None, locks=None)


def test_the_periodic_runs_only_with_nova_configured(tmp_path):
    configured = make_cyborg(tmp_path, **{
        "nova.auth_type": "none",
        "nova.endpoint_override": "http://127.0.0.1:1/v2.1"})
    names = [t.name for t in periodics.Periodics(
        configured.conf, configured.db, _PROGRAMMER).tasks()]
    assert "arq-reclaim" in names
    configured.conf.set_override("reclaim_interval", 0, group="nova")
    assert "arq-reclaim" not in [t.name for t in periodics.Periodics(
        configured.conf, configured.db, _PROGRAMMER).tasks()]
    standalone = make_cyborg(tmp_path)
    assert "arq-reclaim" not in [t.name for t in periodics.Periodics(
        standalone.conf, standalone.db, _PROGRAMMER).tasks()]
    configured.db.dispose()
    standalone.db.dispose()
