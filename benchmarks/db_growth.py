#!/usr/bin/env python3
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

"""Database growth per 1000 boots, and what Nova's clean-up gives back.

Binds ``--boots`` ARQs (one a boot, as Nova creates and binds them) on a
fresh database (``--db sqlite|mariadb|postgresql``), then deletes them as
Nova does when the instances are deleted, and prints the size of the
tables a boot writes (``arqs``, ``attach_handles``, and
``scheduling_lookups``, which stays empty: these boots make no device
profile lookup) after each step, with the ARQ rows left. On MariaDB the
sizes are InnoDB's estimate after ``ANALYZE TABLE``; on sqlite, the whole
file. Not a test: figures only::

    .venv/bin/python benchmarks/db_growth.py --db postgresql --boots 1000
"""

import argparse
import os
import sys
import tempfile
import uuid

import sqlalchemy as sa

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

from cyborg_lite.api import app as app_mod  # noqa: E402
from cyborg_lite.db import engine as db_engine  # noqa: E402
from cyborg_lite.inventory import apply as inventory_apply  # noqa: E402
from tests.fixtures import databases  # noqa: E402
from tests.fixtures.cyborg import make_conf  # noqa: E402
from tests.fixtures.cyborg_server import make_inventory  # noqa: E402
from tests.functional.cyborg_lite.programming import env  # noqa: E402

TABLES = ("arqs", "attach_handles", "scheduling_lookups")


def table_bytes(db):
    """Bytes of :data:`TABLES` with their indexes (sqlite: the file)."""
    with db.engine.connect() as conn:
        name = db.engine.dialect.name
        if name == "sqlite":
            pages = conn.execute(sa.text("PRAGMA page_count")).scalar_one()
            size = conn.execute(sa.text("PRAGMA page_size")).scalar_one()
            return pages * size
        if name == "postgresql":
            conn.execute(sa.text("ANALYZE"))
            return sum(conn.execute(sa.text(
                f"SELECT pg_total_relation_size('{table}')")).scalar_one()
                for table in TABLES)
        conn.execute(sa.text(f"ANALYZE TABLE {', '.join(TABLES)}"))
        return int(conn.execute(sa.text(
            "SELECT SUM(data_length + index_length) FROM "
            "information_schema.tables WHERE table_schema = DATABASE() "
            f"AND table_name IN {TABLES!r}")).scalar_one())


def arq_rows(db):
    return db.read(lambda s: s.execute(
        sa.text("SELECT COUNT(*) FROM arqs")).scalar_one())


def run(url, boots, workdir):
    conf = make_conf(workdir)
    conf.set_override("connection", url, group="database")
    db = db_engine.Database.from_conf(conf)
    db.sync()
    document = make_inventory(handles_per_region=(boots,))
    inventory_apply.apply_document(db, document)
    client = env.Client(app_mod.create_app(conf, db=db, programmer=None))
    profile = client.profile()
    rp = document["devices"][0]["regions"][0]["rp_uuid"]
    empty = table_bytes(db)
    arqs = []
    for _ in range(boots):
        (arq,) = client.arqs(profile)
        status, body = client.bind([arq], rp, str(uuid.uuid4()),
                                   document["host"])
        assert status == 202, body
        arqs.append(arq)
    bound = table_bytes(db)
    for start in range(0, boots, 50):
        status, body = client.call(
            "DELETE", "/v2/accelerator_requests?arqs="
            + ",".join(arqs[start:start + 50]), env.NOVA)
        assert status == 204, body
    deleted = table_bytes(db)
    db.dispose()
    print(f"{db.engine.dialect.name}: {boots} boots")
    print(f"  before:             {empty / 1024:8.0f} KiB")
    print(f"  {boots} instances live: {bound / 1024:8.0f} KiB "
          f"({(bound - empty) / boots:.0f} bytes a boot)")
    print(f"  instances deleted:  {deleted / 1024:8.0f} KiB, "
          f"{arq_rows(db)} ARQ rows left")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", choices=databases.BACKENDS,
                        default="sqlite")
    parser.add_argument("--boots", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        with databases.database(args.db, workdir) as url:
            run(url, args.boots, workdir)


if __name__ == "__main__":
    main()
