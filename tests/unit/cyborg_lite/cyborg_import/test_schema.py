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

"""Schema revision detection of a Cyborg database (sqlite, no server)."""

import pytest
import sqlalchemy as sa

from cyborg_lite import exception
from cyborg_lite.cyborg_import import schema


def _cyborg_db(revision, device_state=True, tables=schema.REQUIRED_TABLES):
    engine = sa.create_engine("sqlite://")
    with engine.begin() as conn:
        for table in tables:
            extra = ", device_state VARCHAR(20)" if (
                table == "devices" and device_state) else ""
            conn.execute(sa.text(
                f"CREATE TABLE {table} (id INTEGER PRIMARY KEY{extra})"))
        if revision is not None:
            conn.execute(sa.text(
                "CREATE TABLE alembic_version (version_num VARCHAR(32))"))
            conn.execute(sa.text(
                "INSERT INTO alembic_version VALUES (:r)"), {"r": revision})
    return engine


def test_cyborg_17_is_detected():
    with _cyborg_db("b47c8f2d1e3a").connect() as conn:
        found = schema.detect(conn)
    assert found.revision == "b47c8f2d1e3a"
    assert found.has_device_state
    assert "Cyborg 17" in found.release


def test_releases_since_2024_1_are_detected_without_device_state():
    with _cyborg_db("6c77bd6afea5", device_state=False).connect() as conn:
        found = schema.detect(conn)
    assert found.release == "2024.1-2026.1"
    assert not found.has_device_state


def test_unknown_revision_is_refused_naming_found_and_supported():
    with _cyborg_db("ede4e3f1a232").connect() as conn:
        with pytest.raises(exception.UnsupportedCyborgSchema) as err:
            schema.detect(conn)
    message = str(err.value)
    assert "ede4e3f1a232" in message
    for revision in schema.KNOWN_REVISIONS:
        assert revision in message


def test_database_without_cyborg_tables_is_refused():
    with _cyborg_db("b47c8f2d1e3a", tables=("devices",)).connect() as conn:
        with pytest.raises(exception.NotACyborgDatabase) as err:
            schema.detect(conn, url="mysql://x/nova")
    assert "deployables" in str(err.value)
    assert "mysql://x/nova" in str(err.value)


def test_unstamped_database_is_refused():
    with _cyborg_db(None).connect() as conn:
        with pytest.raises(exception.NotACyborgDatabase) as err:
            schema.detect(conn)
    assert "alembic_version" in str(err.value)
