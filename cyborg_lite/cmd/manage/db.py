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

"""``cyborg-lite-manage db sync`` (create or upgrade the schema) and
``db purge`` (delete the rows nothing needs any more,
:mod:`cyborg_lite.db.purge`)."""

import argparse
import datetime
import sys

from cyborg_lite import service
from cyborg_lite.db import engine as db_engine
from cyborg_lite.db import migration
from cyborg_lite.db import models
from cyborg_lite.db import purge as purge_db

#: the most recent cutoff ``db purge`` accepts: younger ARQs may be a boot
#: Nova is still scheduling.
MIN_AGE = datetime.timedelta(days=1)


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


def cutoff(text, now=None):
    """``--before``: a number of days ago, or a UTC date or date and time
    (ISO 8601); returns the naive UTC cutoff.

    :raises argparse.ArgumentTypeError: naming what is wrong with it.
    """
    now = now or models.utcnow()
    text = text.strip()
    try:
        days = float(text[:-1] if text.endswith("d") else text)
    except ValueError:
        days = None
    if days is not None:
        if days != days or days in (float("inf"), float("-inf")):
            raise argparse.ArgumentTypeError(f"{text!r} is not a number")
        moment = now - datetime.timedelta(days=days)
    else:
        try:
            moment = datetime.datetime.fromisoformat(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r} is neither a number of days (30) nor a date "
                f"(2026-10-01 or 2026-10-01T12:00:00Z)") from None
        if moment.tzinfo is not None:
            moment = moment.astimezone(datetime.timezone.utc).replace(
                tzinfo=None)
    if moment > now - MIN_AGE:
        raise argparse.ArgumentTypeError(
            f"{text!r} is less than a day ago ({moment.isoformat()}Z): "
            f"accelerator requests that recent may belong to a boot Nova "
            f"is still scheduling")
    return moment


def db_purge(conf, args, out=None):
    """Delete (or with ``--dry-run`` count) what nothing needs any more;
    print a line per table."""
    out = out or sys.stdout
    db = db_engine.Database.from_conf(conf)
    when = f"unchanged since {args.before.isoformat(timespec='seconds')}Z"
    try:
        if args.dry_run:
            rows = purge_db.count(db, args.before)
            verb = "would delete"
        else:
            rows = purge_db.purge(db, args.before,
                                  batch_size=args.batch_size)
            verb = "deleted"
    finally:
        db.dispose()
    print(f"{service.masked_database_url(conf)}: {verb} "
          f"{sum(rows.values())} row(s) {when}", file=out)
    for table in purge_db.TABLES:
        print(f"  {table}: {rows[table]}", file=out)
    return 0


def _batch_size(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= 100000:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a number of rows from 1 to 100000")
    return value


def add_commands(subparsers):
    """Add the ``db`` command group."""
    parser = subparsers.add_parser("db", help="database schema and "
                                              "retention")
    sub = parser.add_subparsers(dest="action", required=True)
    sub.add_parser("sync", help="create or upgrade the schema").set_defaults(
        func=db_sync)
    purge = sub.add_parser(
        "purge",
        help="delete rows nothing needs any more: expired scheduling "
             "lookups, accelerator requests never bound or whose bind "
             "failed, inventory retired and free since; all unchanged "
             "since --before")
    purge.add_argument(
        "--before", type=cutoff, required=True, metavar="DAYS|DATE",
        help="purge only rows unchanged since this: a number of days ago "
             "(30) or a UTC date (2026-10-01, 2026-10-01T12:00:00Z); at "
             "least a day ago")
    purge.add_argument(
        "--dry-run", action="store_true",
        help="count what would be deleted, delete nothing")
    purge.add_argument(
        "--batch-size", type=_batch_size, default=1000, metavar="ROWS",
        help="most rows of a table deleted per transaction, so no table "
             "is locked for long (default: %(default)s)")
    purge.set_defaults(func=db_purge)
