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

"""What ``cyborg-lite-manage cyborg import`` imported, by Cyborg uuid, so
that running it again never brings back a row deleted since (an ARQ Nova
deleted, its handle since handed out again).

Revision ID: 0007
Revises: 0006
"""

from alembic import op
import sqlalchemy as sa

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "cyborg_imported",
        sa.Column("kind", sa.String(32), primary_key=True),
        sa.Column("uuid", sa.String(36), primary_key=True),
        sa.Column("imported_at", sa.DateTime, nullable=False))
