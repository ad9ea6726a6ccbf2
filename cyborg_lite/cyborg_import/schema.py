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

"""Which Cyborg schema revision a database is at.

Cyborg's alembic chain since 2024.1 (read from
``cyborg/db/sqlalchemy/alembic/versions/`` in openstack/cyborg): releases
2024.1 to 2026.1 end at ``6c77bd6afea5`` (``devices.status``);
``9625668549b5`` and ``a35b4295a0e5`` only widen the ``devices.type``
enum (MDEV, PCI, NVME); ``b47c8f2d1e3a`` (Cyborg 17.0.0, 2026.2) adds
``devices.device_state``. Older revisions are refused.
"""

import dataclasses

import sqlalchemy as sa

from cyborg_lite import exception

#: revision -> (the release(s) ending there, has ``devices.device_state``).
KNOWN_REVISIONS = {
    "6c77bd6afea5": ("2024.1-2026.1", False),
    "9625668549b5": ("2026.2 development (MDEV, PCI types)", False),
    "a35b4295a0e5": ("2026.2 development (NVME type)", False),
    "b47c8f2d1e3a": ("2026.2 (Cyborg 17)", True),
}

#: the tables the import reads; a database without them is not Cyborg's.
REQUIRED_TABLES = (
    "devices", "deployables", "attach_handles", "attributes",
    "controlpath_ids", "device_profiles", "extended_accelerator_requests",
)


@dataclasses.dataclass(frozen=True)
class Schema:
    """The detected schema of a Cyborg database."""

    revision: str
    release: str
    has_device_state: bool


def supported():
    """The known revisions as ``revision (release)``, comma-separated."""
    return ", ".join(f"{rev} ({rel})"
                     for rev, (rel, _) in KNOWN_REVISIONS.items())


def detect(connection, url="the source database"):
    """The :class:`Schema` of the Cyborg database behind ``connection``.

    Only reads. Raises :class:`~cyborg_lite.exception.NotACyborgDatabase`
    when Cyborg's tables or its ``alembic_version`` are missing, and
    :class:`~cyborg_lite.exception.UnsupportedCyborgSchema` naming the
    revision found and the supported ones otherwise.
    """
    tables = set(sa.inspect(connection).get_table_names())
    missing = [t for t in REQUIRED_TABLES if t not in tables]
    if missing:
        raise exception.NotACyborgDatabase(
            url=url, reason="missing tables " + ", ".join(missing))
    if "alembic_version" not in tables:
        raise exception.NotACyborgDatabase(
            url=url, reason="no alembic_version table (never stamped by "
            "cyborg-dbsync)")
    rows = [r[0] for r in connection.execute(
        sa.text("SELECT version_num FROM alembic_version"))]
    if len(rows) != 1:
        raise exception.NotACyborgDatabase(
            url=url, reason=f"alembic_version holds {len(rows)} rows, "
            "expected one")
    revision = rows[0]
    if revision not in KNOWN_REVISIONS:
        raise exception.UnsupportedCyborgSchema(
            found=revision, supported=supported())
    release, has_state = KNOWN_REVISIONS[revision]
    columns = {c["name"] for c in sa.inspect(connection).get_columns(
        "devices")}
    # NOTE(import): trust the columns over the stamp, so that a database
    # stamped by hand without the migration is read as it really is.
    return Schema(revision=revision, release=release,
                  has_device_state=has_state and "device_state" in columns)
