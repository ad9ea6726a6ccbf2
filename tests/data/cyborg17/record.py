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

"""Record a Cyborg database's rows as JSON (see SOURCES.rst).

``python record.py SQLALCHEMY_URL > database.json``: every row of the
tables the import reads, and ``alembic_version``, ordered by id;
timestamps as ISO strings.
"""

import datetime
import json
import sys

import sqlalchemy as sa

TABLES = ("alembic_version", "devices", "controlpath_ids", "deployables",
          "attributes", "attach_handles", "device_profiles",
          "extended_accelerator_requests")


def _plain(value):
    if isinstance(value, datetime.datetime):
        return value.isoformat()
    return value


def record(url):
    """``{table: [row dict, ...]}`` of the database at ``url``."""
    engine = sa.create_engine(url)
    metadata = sa.MetaData()
    metadata.reflect(engine, only=TABLES)
    result = {}
    with engine.connect() as conn:
        for name in TABLES:
            table = metadata.tables[name]
            order = table.c.id if "id" in table.c else table.c.version_num
            result[name] = [
                {k: _plain(v) for k, v in row._mapping.items()}
                for row in conn.execute(sa.select(table).order_by(order))]
    engine.dispose()
    return result


if __name__ == "__main__":
    json.dump(record(sys.argv[1]), sys.stdout, indent=1, sort_keys=True)
    print()
