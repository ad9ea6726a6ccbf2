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

"""Read a Cyborg database, never writing to it.

The source is opened read-only where the database can say so (sqlite
``mode=ro``, a ``READ ONLY`` transaction on MariaDB/MySQL and PostgreSQL),
and only ``SELECT`` is ever sent. Every table is read in one transaction,
so the snapshot is consistent even if Cyborg still runs.
"""

import dataclasses

import sqlalchemy as sa

from cyborg_lite import exception
from cyborg_lite.cyborg_import import schema as schema_mod
from cyborg_lite.db import backends as db_backends

#: the tables read, in the order rows reference each other.
TABLES = ("devices", "controlpath_ids", "deployables", "attributes",
          "attach_handles", "device_profiles",
          "extended_accelerator_requests")


@dataclasses.dataclass
class Source:
    """What a Cyborg database holds: ``{table: [row dict, ...]}`` in id
    order, and its :class:`~cyborg_lite.cyborg_import.schema.Schema`."""

    schema: schema_mod.Schema
    rows: dict

    def by_id(self, table):
        """``{id: row}`` of ``table``."""
        return {row["id"]: row for row in self.rows[table]}


def _read_only_url(url):
    url = sa.engine.make_url(url)
    if url.get_backend_name() == "sqlite" and url.database not in (
            None, "", ":memory:"):
        # NOTE(import): pysqlite opens a URI (here read-only) only when
        # asked with uri=true; the file must then already exist.
        return url.set(database=f"file:{url.database}?mode=ro",
                       query=dict(url.query, uri="true"))
    return url


def read(url):
    """The :class:`Source` at ``url`` (an SQLAlchemy URL).

    :raises NotACyborgDatabase: unreachable, or not Cyborg's tables.
    :raises UnsupportedCyborgSchema: a schema revision not supported.
    """
    shown = sa.engine.make_url(url).render_as_string(hide_password=True)
    engine = sa.create_engine(_read_only_url(url))
    try:
        with engine.connect() as conn:
            db_backends.begin_read_only(conn)
            found = schema_mod.detect(conn, url=shown)
            metadata = sa.MetaData()
            metadata.reflect(conn, only=TABLES)
            rows = {}
            for name in TABLES:
                table = metadata.tables[name]
                rows[name] = [dict(row._mapping) for row in conn.execute(
                    sa.select(table).order_by(table.c.id))]
            conn.rollback()
    except sa.exc.DBAPIError as error:
        raise exception.NotACyborgDatabase(
            url=shown, reason=f"cannot read it ({error.orig})")
    finally:
        engine.dispose()
    return Source(schema=found, rows=rows)
