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

"""The record of agents that stopped answering, on sqlite, MariaDB and
PostgreSQL: what every API worker reads before calling an agent."""

import datetime
import uuid

import sqlalchemy as sa

from cyborg_lite.db import agent_contacts as contact_db
from cyborg_lite.db import engine as db_engine
from cyborg_lite.db import models
from cyborg_lite.inventory import apply as inventory_apply
from tests.fixtures.cyborg_server import make_inventory


def _host(db=None):
    """A new host name; with ``db``, a host with a device there."""
    if db is None:
        return f"compute-{uuid.uuid4().hex[:8]}"
    document = make_inventory()
    inventory_apply.apply_document(db, document)
    return document["host"]


def _age(db, host, column, seconds):
    """Move ``column`` of ``host``'s row ``seconds`` into the past."""
    contact = models.AgentContact

    def _run(session):
        session.execute(
            sa.update(contact).where(contact.hostname == host)
            .values({column: models.utcnow()
                     - datetime.timedelta(seconds=seconds)}))
    db.run(_run)


def test_first_calls_go_and_a_long_wait_refuses_the_next(db):
    host = _host()
    assert contact_db.begin_call(db, host, 1, 30) is None
    # A second call while the first waits less than the limit goes too.
    assert contact_db.begin_call(db, host, 1, 30) is None
    _age(db, host, "waiting_since", 2)
    refused = contact_db.begin_call(db, host, 1, 30)
    assert refused.hostname == host and refused.error is None
    # The answer clears the wait: calls go again.
    contact_db.answered(db, host)
    assert contact_db.begin_call(db, host, 1, 30) is None


def test_a_wait_left_by_a_dead_process_is_forgotten(db):
    host = _host()
    assert contact_db.begin_call(db, host, 1, 30) is None
    _age(db, host, "waiting_since", 31)
    assert contact_db.begin_call(db, host, 1, 30) is None
    assert host not in {s.hostname for s in contact_db.silent(db)}


def test_unanswered_is_silent_until_an_answer(db):
    host, other = _host(db), _host(db)
    assert contact_db.begin_call(db, host, 1, 30) is None
    contact_db.unanswered(db, host, "did not answer find_image within 10 s")
    # Never called before: the first unanswered call inserts the row.
    contact_db.unanswered(db, other, "x" * 400)
    refused = contact_db.begin_call(db, host, 1, 30)
    assert refused.error == "did not answer find_image within 10 s"
    silent = {s.hostname: s for s in contact_db.silent(db)}
    assert silent[host].since <= models.utcnow()
    assert len(silent[other].error) == 255
    # A later failure keeps the first moment of silence.
    first = silent[host].since
    contact_db.unanswered(db, host, "again")
    assert {s.hostname: s for s in contact_db.silent(db)}[host].since \
        == first
    contact_db.answered(db, host)
    assert host not in {s.hostname for s in contact_db.silent(db)}
    assert contact_db.begin_call(db, host, 1, 30) is None


def test_one_probe_per_interval_across_workers(db):
    host = _host()
    assert not contact_db.claim_probe(db, host, 1)  # no row
    contact_db.unanswered(db, host, "timeout")
    # unanswered counts as a probe: the next is due after the interval.
    assert not contact_db.claim_probe(db, host, 1)
    _age(db, host, "probed_at", 2)
    other = db_engine.Database(db.url)
    try:
        claims = [contact_db.claim_probe(db, host, 1),
                  contact_db.claim_probe(other, host, 1)]
    finally:
        other.dispose()
    assert claims == [True, False]
    contact_db.answered(db, host)
    _age(db, host, "probed_at", 2)
    assert not contact_db.claim_probe(db, host, 1)  # not silent any more


def test_a_host_taken_out_of_the_inventory_is_not_reported(db):
    document = make_inventory()
    inventory_apply.apply_document(db, document)
    host, never_inventoried = document["host"], _host()
    contact_db.unanswered(db, host, "timeout")
    contact_db.unanswered(db, never_inventoried, "timeout")
    assert [s.hostname for s in contact_db.silent(db)] == [host]
    inventory_apply.apply_document(db, dict(document, devices=[]))
    assert contact_db.silent(db) == []
