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


"""Nova events left behind by a worker that died after a bind committed:
``resend_pending`` and ``cyborg-lite-manage notifications resend`` send each
exactly once, and only once it is older than the grace period."""

import datetime
import json
import threading
import uuid

import pytest
import sqlalchemy as sa

from cyborg_lite import notifier as notifier_mod
from cyborg_lite.cmd import manage
from cyborg_lite.db import arqs as arq_db
from cyborg_lite.db import engine as db_engine
from cyborg_lite.db import models
from tests.fixtures.cyborg import FPGA_REGION0_RP
from tests.fixtures.cyborg import make_conf
from tests.fixtures.cyborg import make_cyborg


class DiedBeforeSending(notifier_mod.NovaNotifier):
    """A worker that commits binds and dies before its events go out."""

    def notify_later(self, arq_uuids, instances=None):
        return None


def _nova(nova_standin):
    return {"nova.auth_type": "none",
            "nova.endpoint_override": nova_standin.endpoint,
            "nova.notify_retry_interval": 0.01,
            "nova.notify_retries": 1, "nova.notify_instant_binds": True}


def _crashed_cyborg(tmp_path, nova_standin, db_url=None):
    overrides = _nova(nova_standin)
    notifier = DiedBeforeSending(make_conf(tmp_path, **overrides), None)
    cyborg = make_cyborg(tmp_path, db_url=db_url, notifier=notifier,
                         **overrides)
    notifier.db = cyborg.db
    return cyborg


def _bind(cyborg, count=1):
    profile = cyborg.create_profile([{"resources:FPGA": str(count)}])
    arqs = [a["uuid"] for a in cyborg.create_arqs(profile["name"])]
    instance = str(uuid.uuid4())
    assert cyborg.bind(arqs, FPGA_REGION0_RP, instance).status_code == 202
    return arqs, instance


def _age(db, arq_uuids, seconds, notification=None):
    """Make the ARQs' last change ``seconds`` old."""
    values = {"updated_at": models.utcnow()
              - datetime.timedelta(seconds=seconds)}
    if notification:
        values["notification"] = notification
    db.run(lambda s: s.execute(sa.update(models.ARQ).where(
        models.ARQ.uuid.in_(arq_uuids)).values(**values)))


def _notification(db, arq_uuids):
    return sorted(a.notification for a in arq_db.get_all(db,
                                                          uuids=arq_uuids))


@pytest.fixture
def crashed(tmp_path, nova_standin):
    cyborg = _crashed_cyborg(tmp_path, nova_standin)
    yield cyborg, nova_standin
    cyborg.db.dispose()


def test_pending_event_is_sent_once_after_the_grace_period(crashed):
    cyborg, nova = crashed
    arqs, instance = _bind(cyborg, count=2)
    assert _notification(cyborg.db, arqs) == ["pending", "pending"]
    notifier = cyborg.app.extensions["cyborg_lite"].notifier
    # within the grace period the binding worker may still send them
    result = notifier_mod.resend_pending(notifier, grace=60)
    assert result.sent == [] and nova.settle(quiet=0.2) == []

    _age(cyborg.db, arqs, 120)
    result = notifier_mod.resend_pending(notifier, grace=60)
    assert sorted(result.sent) == sorted(arqs) and result.failed == []
    events = nova.wait_for_events(2, server_uuid=instance)
    assert sorted(e["tag"] for e in events) == sorted(arqs)
    assert {e["status"] for e in events} == {"completed"}
    assert {e.microversion for e in events} == {"2.82"}
    assert _notification(cyborg.db, arqs) == ["sent", "sent"]
    # nothing is sent twice
    _age(cyborg.db, arqs, 120)
    assert notifier_mod.resend_pending(notifier, grace=60).sent == []
    assert len(nova.settle(quiet=0.2)) == 2


def test_a_dead_senders_claim_is_taken_over_a_live_one_is_not(crashed):
    cyborg, nova = crashed
    dead, dead_instance = _bind(cyborg)
    live, _ = _bind(cyborg)
    _age(cyborg.db, dead, 3600, notification="sending")
    _age(cyborg.db, live, 120, notification="sending")
    notifier = cyborg.app.extensions["cyborg_lite"].notifier
    result = notifier_mod.resend_pending(notifier, grace=60,
                                         stale_sending=600)
    assert result.sent == dead
    assert [e["tag"] for e in nova.wait_for_events(1)] == dead
    assert _notification(cyborg.db, live) == ["sending"]


def test_undelivered_events_are_recorded_failed_and_retried_on_demand(
        crashed):
    cyborg, nova = crashed
    arqs, instance = _bind(cyborg)
    _age(cyborg.db, arqs, 120)
    nova.fail_next(2, status=503)
    notifier = cyborg.app.extensions["cyborg_lite"].notifier
    result = notifier_mod.resend_pending(notifier, grace=60)
    assert result.failed == arqs and result.sent == []
    assert _notification(cyborg.db, arqs) == ["failed"]
    _age(cyborg.db, arqs, 120)
    assert notifier_mod.resend_pending(notifier, grace=60).failed == []
    result = notifier_mod.resend_pending(notifier, grace=60,
                                         include_failed=True)
    assert result.sent == arqs
    codes = [e.code for e in nova.events_for(instance)]
    assert codes == [503, 503, 200]


def test_two_workers_resending_at_once_send_each_event_once(
        tmp_path, nova_standin, db_url):
    cyborg = _crashed_cyborg(tmp_path, nova_standin, db_url=db_url)
    arqs, instance = _bind(cyborg, count=4)
    _age(cyborg.db, arqs, 120)
    workers = 4
    start = threading.Barrier(workers)
    results = []

    def worker():
        db = db_engine.Database(cyborg.db.url)
        notifier = notifier_mod.NovaNotifier(cyborg.conf, db)
        try:
            start.wait(10)
            results.append(notifier_mod.resend_pending(notifier, grace=60))
        finally:
            db.dispose()

    threads = [threading.Thread(target=worker) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(results) == workers
    sent = [tag for result in results for tag in result.sent]
    assert sorted(sent) == sorted(arqs)
    nova_standin.wait_for_events(4, server_uuid=instance)
    events = nova_standin.settle(quiet=0.3)
    assert sorted(e["tag"] for e in events) == sorted(arqs)
    assert _notification(cyborg.db, arqs) == ["sent"] * 4
    cyborg.db.dispose()


def _config_file(tmp_path, db_url, nova=None):
    text = (f"[DEFAULT]\nstate_path = {tmp_path}\n"
            f"[database]\nconnection = {db_url}\n"
            "[oslo_policy]\npolicy_file = none.yaml\n")
    if nova:
        text += (f"[nova]\nauth_type = none\nendpoint_override = "
                 f"{nova.endpoint}\nnotify_retries = 1\n"
                 "notify_retry_interval = 0.01\n"
                 "notify_instant_binds = true\n")
    path = tmp_path / "cyborg_lite.conf"
    path.write_text(text)
    return str(path)


def _manage(config_file, *args):
    with pytest.raises(SystemExit) as exit_info:
        manage.main(["--config-file", config_file, *args])
    return exit_info.value.code


def test_manage_notifications_resend(tmp_path, nova_standin, capsys):
    url = f"sqlite:///{tmp_path}/cli.sqlite"
    cyborg = _crashed_cyborg(tmp_path, nova_standin, db_url=url)
    arqs, instance = _bind(cyborg)
    config_file = _config_file(tmp_path, url, nova=nova_standin)
    capsys.readouterr()
    assert _manage(config_file, "notifications", "resend") == 0
    assert json.loads(capsys.readouterr().out) == {"sent": [],
                                                   "failed": []}
    assert _manage(config_file, "notifications", "resend", "--grace",
                   "0") == 0
    out = capsys.readouterr().out
    assert json.loads(out[out.index("{"):]) == {"sent": arqs, "failed": []}
    assert [e["tag"] for e in nova_standin.wait_for_events(
        1, server_uuid=instance)] == arqs
    # standalone: no Nova to notify is an error the operator sees
    standalone = _config_file(tmp_path, url)
    assert _manage(standalone, "notifications", "resend") == 2
    assert "[nova] is not configured" in capsys.readouterr().err
    cyborg.db.dispose()
