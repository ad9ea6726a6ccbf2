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
import datetime
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
from cyborg_lite.db import arq_reaper
from cyborg_lite.db import models
from tests.fixtures.cyborg import FPGA_REGION0_RP
from tests.fixtures.cyborg import make_cyborg
from tests.fixtures.cyborg import MEMBER


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


def _created_ago(cyborg, arq_uuids, seconds):
    cyborg.db.run(lambda s: s.execute(
        sa.update(models.ARQ).where(models.ARQ.uuid.in_(arq_uuids))
        .values(created_at=models.utcnow()
                - datetime.timedelta(seconds=seconds))))


def test_initial_arqs_nova_never_learned_of_are_deleted_in_batches(
        tmp_path, caplog, db_url):
    with _nova() as nova:
        cyborg = _cyborg(tmp_path, nova.endpoint, db_url,
                         **{"nova.reclaim_batch": 2})
        profile = cyborg.create_profile([{"resources:FPGA": "1"}])
        lost = [cyborg.create_arqs(profile["name"])[0]["uuid"]
                for _ in range(3)]
        young = cyborg.create_arqs(profile["name"])[0]["uuid"]
        users = cyborg.create_arqs(profile["name"], caller=MEMBER)[0]["uuid"]
        bound, instance = _bound(cyborg)
        nova.servers.add(instance)
        _created_ago(cyborg, lost + [users, bound], 3601)
        _created_ago(cyborg, [young], 3500)
        reclaimer = reclaim.Reclaimer(cyborg.conf, cyborg.db)
        caplog.set_level(logging.WARNING, logger="cyborg_lite.reclaim")

        assert sorted(reclaimer.run_once()) == sorted(lost)

        # Nova's young ARQ, a user's and a bound one stay.
        assert sorted(_arqs(cyborg)) == sorted([
            (young, "Initial"), (users, "Initial"), (bound, "Bound")])
        lines = [r.getMessage() for r in caplog.records
                 if r.name == "cyborg_lite.reclaim"]
        assert len(lines) == 2, lines  # one per batch of 2
        assert all(lost[0] in line or lost[2] in line for line in lines)
        assert reclaimer.run_once() == []
        # 0 keeps them whatever their age.
        _created_ago(cyborg, [young], 7200)
        cyborg.conf.set_override("initial_arq_max_age", 0, group="nova")
        assert reclaimer.run_once() == []
        assert (young, "Initial") in _arqs(cyborg)
    cyborg.db.dispose()


def test_an_arq_bound_after_the_reaper_read_it_is_kept(tmp_path, db_url):
    cyborg = make_cyborg(tmp_path, db_url=db_url)
    profile = cyborg.create_profile([{"resources:FPGA": "1"}])
    arqs = [cyborg.create_arqs(profile["name"])[0]["uuid"]
            for _ in range(2)]
    _created_ago(cyborg, arqs, 7200)

    def _reap_while_nova_binds(session):
        execute = session.execute

        def bind_before_delete(statement, *args, **kwargs):
            if getattr(statement, "is_delete", False):
                # NOTE(tests): what a bind committed between the reaper's
                # read and its DELETE leaves.
                execute(sa.update(models.ARQ)
                        .where(models.ARQ.uuid == arqs[0])
                        .values(state="BindStarted",
                                instance_uuid=str(uuid.uuid4())))
            return execute(statement, *args, **kwargs)

        session.execute = bind_before_delete
        return arq_reaper.reap(session, 3600, 10)

    gone, looked_at = cyborg.db.run(_reap_while_nova_binds)

    assert (gone, looked_at) == ([arqs[1]], 2)
    assert _arqs(cyborg) == [(arqs[0], "BindStarted")]
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
