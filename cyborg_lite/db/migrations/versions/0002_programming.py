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

"""Bind-time programming and function pools: programming bookkeeping on
deployables (target, owner lease, last error) and operator pool policies.

Revision ID: 0002
Revises: 0001
"""

from alembic import op
import sqlalchemy as sa

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("deployables") as batch:
        batch.add_column(sa.Column("target_function_id", sa.String(255),
                                   nullable=True))
        batch.add_column(sa.Column("target_bitstream_id", sa.String(36),
                                   nullable=True))
        batch.add_column(sa.Column("programming_owner", sa.String(64),
                                   nullable=True))
        batch.add_column(sa.Column("heartbeat_at", sa.DateTime,
                                   nullable=True))
        batch.add_column(sa.Column("last_error", sa.Text, nullable=True))
        batch.create_index("ix_deployables_state", ["state"])
    op.create_table(
        "function_pools",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(255), nullable=False, unique=True),
        sa.Column("function_id", sa.String(255), nullable=False),
        sa.Column("min_ready", sa.Integer, nullable=False),
        sa.Column("resource_class", sa.String(255), nullable=True),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("updated_at", sa.DateTime, nullable=True))
