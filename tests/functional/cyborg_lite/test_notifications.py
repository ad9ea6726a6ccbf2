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


"""Nova accelerator-request-bound events: after the reply, once per ARQ,
retried on failure, 207/422 not retried, skipped without [nova]. The
events of ARQs bound within the PATCH are asked for here
(``[nova] notify_instant_binds``); by default only ARQs bound later (their
region programmed first) get one."""

import logging
import threading
import time
import uuid

import pytest
import requests
import sqlalchemy as sa

from cyborg_lite import notifier as notifier_mod
from cyborg_lite.db import arqs as arq_db
from cyborg_lite.db import models
from tests.fixtures.cyborg import FPGA_REGION0_RP
from tests.fixtures.cyborg import make_conf
from tests.fixtures.cyborg import make_cyborg
from tests.fixtures.cyborg import NOVA
from tests.fixtures.cyborg import serve

ARQS = "/v2/accelerator_requests"


class GatedNotifier(notifier_mod.NovaNotifier):
    """Holds every event until the test opens the gate."""

    def __init__(self, conf, db):
        super().__init__(conf, db)
        self.gate = threading.Event()

    def send(self, arq_uuids, instances=None):
        assert self.gate.wait(10), "the test never opened the gate"
        return super().send(arq_uuids, instances)


def _serve_with_nova(tmp_path, nova_standin, db_url=None, **options):
    overrides = {"nova.auth_type": "none",
                 "nova.endpoint_override": nova_standin.endpoint,
                 "nova.notify_retry_interval": 0.05,
                 "nova.notify_retries": 3,
                 "nova.notify_instant_binds": True, **options}
    cyborg = make_cyborg(tmp_path, db_url=db_url, **overrides)
    with serve(cyborg.app) as url:
        cyborg.url = url
        yield cyborg, nova_standin
    cyborg.app.extensions["cyborg_lite"].notifier.shutdown()
    cyborg.db.dispose()


@pytest.fixture
def with_nova(tmp_path, nova_standin, request):
    yield from _serve_with_nova(tmp_path, nova_standin,
                                **getattr(request, "param", {}))


@pytest.fixture
def with_nova_on_each_db(tmp_path, nova_standin, db_url):
    yield from _serve_with_nova(tmp_path, nova_standin, db_url=db_url)


def _bind_over_http(cyborg, count=2, instance=None):
    profile = cyborg.create_profile([{"resources:FPGA": str(count)}])
    arqs = [a["uuid"] for a in cyborg.create_arqs(profile["name"])]
    instance = instance or str(uuid.uuid4())
    body = {arq: [{"op": "add", "path": "/hostname", "value": "h"},
                  {"op": "add", "path": "/device_rp_uuid",
                   "value": FPGA_REGION0_RP},
                  {"op": "add", "path": "/instance_uuid", "value": instance}]
            for arq in arqs}
    response = requests.patch(cyborg.url + ARQS, json=body, headers=NOVA,
                              timeout=5)
    return response, arqs, instance


def test_one_completed_event_per_arq_with_microversion_2_82(with_nova):
    cyborg, nova = with_nova
    response, arqs, instance = _bind_over_http(cyborg)
    assert response.status_code == 202
    events = nova.wait_for_events(2, server_uuid=instance)
    assert sorted(e["tag"] for e in events) == sorted(arqs)
    for event in events:
        assert event["name"] == "accelerator-request-bound"
        assert event["status"] == "completed"
        assert event.microversion == "2.82"
    # repeating the identical bind sends nothing more
    body = {arq: [{"op": "add", "path": p, "value": v} for p, v in
                  (("/hostname", "h"), ("/device_rp_uuid", FPGA_REGION0_RP),
                   ("/instance_uuid", instance))] for arq in arqs}
    assert requests.patch(cyborg.url + ARQS, json=body, headers=NOVA,
                          timeout=5).status_code == 202
    assert len(nova.settle(quiet=0.3)) == 2


@pytest.mark.parametrize("with_nova", [{"nova.notify_instant_binds": False}],
                         indirect=True)
def test_arqs_bound_within_the_patch_get_no_event_by_default(with_nova):
    """Nova reads them as resolved before it waits for any event: theirs
    would only be answered 207/422, or logged by nova-compute as
    unexpected. Nothing is left for the resend pass either."""
    cyborg, nova = with_nova
    response, arqs, instance = _bind_over_http(cyborg)
    assert response.status_code == 202
    assert nova.settle(quiet=0.3) == []
    rows = arq_db.get_all(cyborg.db, uuids=arqs)
    assert {r.state for r in rows} == {"Bound"}
    assert {r.notification for r in rows} == {None}


@pytest.fixture
def gated(tmp_path, nova_standin):
    """cyborg_lite whose events wait for ``notifier.gate``; yields
    ``(cyborg, notifier)``."""
    overrides = {"nova.auth_type": "none",
                 "nova.endpoint_override": nova_standin.endpoint,
                 "nova.notify_instant_binds": True}
    notifier = GatedNotifier(make_conf(tmp_path, **overrides), None)
    cyborg = make_cyborg(tmp_path, notifier=notifier, **overrides)
    notifier.db = cyborg.db
    yield cyborg, notifier
    notifier.gate.set()
    notifier.shutdown()


def test_event_is_sent_after_the_reply(gated, nova_standin):
    cyborg, notifier = gated
    with serve(cyborg.app) as url:
        cyborg.url = url
        # the reply arrives while the event is still held back
        response, arqs, instance = _bind_over_http(cyborg, count=1)
        assert response.status_code == 202
        assert nova_standin.events == []
        notifier.gate.set()
        events = nova_standin.wait_for_events(1, server_uuid=instance)
    assert [e["tag"] for e in events] == arqs


def test_an_arq_unbound_before_its_event_is_sent_reports_failed(
        gated, nova_standin):
    # The worker that bound it knows the instance; the ARQ was unbound
    # (and its event made pending again) before the worker claimed it.
    cyborg, notifier = gated
    with serve(cyborg.app) as url:
        cyborg.url = url
        response, (arq,), instance = _bind_over_http(cyborg, count=1)
        assert response.status_code == 202
        with cyborg.db.transaction() as session:
            session.execute(sa.update(models.ARQ).where(
                models.ARQ.uuid == arq).values(state="Unbound",
                                               notification="pending"))
        notifier.gate.set()
        (event,) = nova_standin.wait_for_events(1, server_uuid=instance)
    assert (event["tag"], event["status"]) == (arq, "failed")


def test_server_errors_are_retried(with_nova):
    cyborg, nova = with_nova
    nova.fail_next(2, status=503)
    response, arqs, instance = _bind_over_http(cyborg, count=1)
    assert response.status_code == 202
    events = nova.wait_for_events(3, server_uuid=instance)
    assert [e.code for e in events][:2] == [503, 503]
    assert len(nova.settle(quiet=0.3)) == 3
    rows = arq_db.get_all(cyborg.db, uuids=arqs)
    assert [r.notification for r in rows] == ["sent"]


def test_207_with_all_422_is_not_retried(with_nova):
    cyborg, nova = with_nova
    nova.answer_207(422)
    response, arqs, instance = _bind_over_http(cyborg)
    assert response.status_code == 202
    nova.wait_for_events(2, server_uuid=instance)
    assert len(nova.settle(quiet=0.3)) == 2
    assert len(nova.requests) >= 1


def test_failed_bind_sends_no_event(with_nova):
    cyborg, nova = with_nova
    profile = cyborg.create_profile([{"resources:FPGA": "1"}])
    arq = cyborg.create_arqs(profile["name"])[0]["uuid"]
    body = {arq: [{"op": "add", "path": "/hostname", "value": "h"},
                  {"op": "add", "path": "/device_rp_uuid",
                   "value": str(uuid.uuid4())},
                  {"op": "add", "path": "/instance_uuid",
                   "value": str(uuid.uuid4())}]}
    response = requests.patch(cyborg.url + ARQS, json=body, headers=NOVA,
                              timeout=5)
    assert response.status_code == 404
    assert nova.settle(quiet=0.3) == []


def test_two_workers_never_both_send(with_nova):
    cyborg, nova = with_nova
    response, arqs, instance = _bind_over_http(cyborg, count=1)
    nova.wait_for_events(1, server_uuid=instance)
    # a second worker asked to send the same ARQ's event finds it claimed
    other = notifier_mod.NovaNotifier(cyborg.conf, cyborg.db)
    assert other.send(arqs) == []
    assert len(nova.settle(quiet=0.3)) == 1


def test_without_nova_nothing_is_sent_and_bind_works(cyborg, caplog):
    caplog.set_level(logging.INFO, logger="cyborg_lite.notifier")
    notifier = cyborg.app.extensions["cyborg_lite"].notifier
    assert notifier.enabled is False
    assert notifier.enabled is False
    assert sum("not configured" in r.message for r in caplog.records) == 1
    profile = cyborg.create_profile([{"resources:FPGA": "1"}])
    arq = cyborg.create_arqs(profile["name"])[0]["uuid"]
    response = cyborg.bind([arq], FPGA_REGION0_RP, str(uuid.uuid4()))
    assert response.status_code == 202
    assert arq_db.get_all(cyborg.db, uuids=[arq])[0].notification is None


def _bind_instances(cyborg, count):
    """Bind ``count`` instances, one ARQ each, one PATCH each; returns
    ``{arq uuid: instance uuid}``."""
    bound = {}
    for _ in range(count):
        response, (arq,), instance = _bind_over_http(cyborg, count=1)
        assert response.status_code == 202
        bound[arq] = instance
    return bound


@pytest.mark.parametrize("with_nova", [{"nova.notify_batch_interval": 1.0}],
                         indirect=True)
def test_events_of_binds_close_together_leave_in_one_call(with_nova):
    cyborg, nova = with_nova
    bound = _bind_instances(cyborg, 3)
    events = nova.wait_for_events(3)
    assert len(nova.settle(quiet=0.3)) == 3
    assert {e["tag"]: e["server_uuid"] for e in events} == bound
    assert {e["status"] for e in events} == {"completed"}
    assert len(nova.requests) == 1
    rows = arq_db.get_all(cyborg.db, uuids=list(bound))
    assert {r.notification for r in rows} == {"sent"}


def test_shutdown_sends_what_is_queued(tmp_path, nova_standin):
    overrides = {"nova.auth_type": "none",
                 "nova.endpoint_override": nova_standin.endpoint,
                 "nova.notify_batch_interval": 5.0,
                 "nova.notify_instant_binds": True}
    cyborg = make_cyborg(tmp_path, **overrides)
    with serve(cyborg.app) as url:
        cyborg.url = url
        response, (arq,), instance = _bind_over_http(cyborg, count=1)
    assert response.status_code == 202
    # a second worker's notifier, asked for the same event, waits up to 5 s
    # for more; its shutdown sends the batch at once
    other = notifier_mod.NovaNotifier(cyborg.conf, cyborg.db)
    queued = other.notify_later([arq], {arq: instance})
    started = time.monotonic()
    other.shutdown(wait=True)
    assert time.monotonic() - started < 4
    assert [(e["tag"], e["server_uuid"]) for e in queued.result()] == [
        (arq, instance)]
    # the binding worker's own batch finds the event claimed: one event
    cyborg.app.extensions["cyborg_lite"].notifier.shutdown(wait=True)
    assert [(e["tag"], e["server_uuid"]) for e in nova_standin.settle(
        quiet=0.3)] == [(arq, instance)]
    # after shutdown nothing is queued: the event stays for the resend
    assert other.notify_later([arq]).result() == []


def test_a_batch_is_claimed_in_one_update_and_never_twice(
        with_nova_on_each_db):
    cyborg, nova = with_nova_on_each_db
    bound = _bind_instances(cyborg, 3)
    nova.wait_for_events(3)
    deadline = time.monotonic() + 10
    while {r.notification for r in arq_db.get_all(
            cyborg.db, uuids=list(bound))} != {"sent"}:
        assert time.monotonic() < deadline, "events never recorded sent"
        time.sleep(0.05)
    table = models.ARQ.__table__
    _, *others = bound
    with cyborg.db.transaction() as session:
        session.execute(sa.update(table).where(table.c.uuid.in_(bound))
                        .values(notification="pending"))
    updates = []
    for engine in cyborg.db.engines:
        sa.event.listen(engine, "before_cursor_execute",
                        lambda conn, cursor, statement, *args: updates.append(
                            statement) if statement.startswith("UPDATE")
                        else None)
    claimed = arq_db.claim_notifications(cyborg.db, list(bound), bound)
    assert sorted(claimed) == sorted(
        (arq, instance, "Bound") for arq, instance in bound.items())
    assert len(updates) == 1
    # another worker claimed one of them first: only the others are
    # claimed (by the one UPDATE where it returns what it matched; on
    # MySQL it is rolled back and each is claimed on its own)
    with cyborg.db.transaction() as session:
        session.execute(sa.update(table).where(table.c.uuid.in_(others))
                        .values(notification="pending"))
    claimed = arq_db.claim_notifications(cyborg.db, list(bound), bound)
    assert sorted(claimed) == sorted((arq, bound[arq], "Bound")
                                     for arq in others)
    rows = arq_db.get_all(cyborg.db, uuids=list(bound))
    assert {r.notification for r in rows} == {"sending"}
