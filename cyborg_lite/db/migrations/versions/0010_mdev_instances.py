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

"""One attach handle per vGPU instance: ``attach_handles.mdev_index`` and
a unique key that includes it. Existing handles keep their rows and uuids
(index 0).

Revision ID: 0010
Revises: 0009
"""

from alembic import op
import sqlalchemy as sa

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

_OLD_COLUMNS = ["deployable_id", "pci_address", "mdev_type"]
#: the name sqlite's unnamed constraint gets while the table is copied.
_NAMING = {"uq": "uq_%(table_name)s_%(column_0_name)s"}


def _old_unique_name(bind):
    """What the backend named 0001's unnamed unique constraint (MariaDB:
    ``deployable_id``; PostgreSQL: ``attach_handles_..._key``; sqlite has
    no name, the batch copy's naming convention gives it one)."""
    for constraint in sa.inspect(bind).get_unique_constraints(
            "attach_handles"):
        if (constraint["column_names"] == _OLD_COLUMNS
                and constraint.get("name")):
            return constraint["name"]
    return "uq_attach_handles_deployable_id"


def upgrade():
    old = _old_unique_name(op.get_bind())
    with op.batch_alter_table("attach_handles",
                              naming_convention=_NAMING) as batch:
        batch.add_column(sa.Column("mdev_index", sa.Integer, nullable=False,
                                   server_default="0"))
        batch.drop_constraint(old, type_="unique")
        batch.create_unique_constraint(
            "uq_attach_handles_instance", _OLD_COLUMNS + ["mdev_index"])
