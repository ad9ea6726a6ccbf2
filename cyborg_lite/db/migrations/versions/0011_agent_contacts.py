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

"""Remember, per host, when its agent last answered the API and since when
it has not, so binds needing a silent agent are refused at once and
``/healthcheck`` and the metrics name it.

Revision ID: 0011
Revises: 0010
"""

from alembic import op
import sqlalchemy as sa

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "agent_contacts",
        sa.Column("hostname", sa.String(255), primary_key=True),
        sa.Column("answered_at", sa.DateTime, nullable=True),
        sa.Column("silent_since", sa.DateTime, nullable=True),
        sa.Column("waiting_since", sa.DateTime, nullable=True),
        sa.Column("probed_at", sa.DateTime, nullable=True),
        sa.Column("last_error", sa.String(255), nullable=True))
