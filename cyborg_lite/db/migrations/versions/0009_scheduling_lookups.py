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

"""Route Nova's device profile lookups: regions kept for a content while
idle, the lookups not bound yet, and the row their routing serialises on.

Revision ID: 0009
Revises: 0008
"""

from alembic import op
import sqlalchemy as sa

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("deployables") as batch:
        batch.add_column(sa.Column("assigned_function_id", sa.String(255)))
        batch.add_column(sa.Column("assigned_bitstream_id", sa.String(36)))
        batch.add_column(sa.Column("assigned_until", sa.DateTime))
        batch.add_column(sa.Column("lock_written", sa.String(255)))
    op.create_table(
        "scheduling_lookups",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("lock_trait", sa.String(255), nullable=False, index=True),
        sa.Column("units", sa.Integer, nullable=False),
        sa.Column("function_trait", sa.String(255), nullable=True),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("expires_at", sa.DateTime, nullable=False, index=True))
    router = op.create_table(
        "scheduling_router",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False))
    op.bulk_insert(router, [{"id": 1}])
