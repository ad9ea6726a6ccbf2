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

"""``cyborg-lite-manage db sync``: create or upgrade the schema."""

from cyborg_lite import service
from cyborg_lite.db import engine as db_engine
from cyborg_lite.db import migration


def db_sync(conf, args):
    """Create or upgrade the schema; print which database and where it
    started and ended."""
    db = db_engine.Database.from_conf(conf)
    try:
        before = migration.current(db.engine)
        db.sync()
        after = migration.current(db.engine)
    finally:
        db.dispose()
    where = service.masked_database_url(conf)
    if before == after:
        print(f"{where}: schema already at the newest revision ({after}).")
    else:
        print(f"{where}: schema migrated from {before or 'empty'} to the "
              f"newest revision ({after}).")
    return 0


def add_commands(subparsers):
    """Add the ``db`` command group."""
    parser = subparsers.add_parser("db", help="database schema")
    sub = parser.add_subparsers(dest="action", required=True)
    sub.add_parser("sync", help="create or upgrade the schema").set_defaults(
        func=db_sync)
