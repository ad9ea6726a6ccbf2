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

"""Remember whether an accelerator request was created with a service
token (Nova's): such a request still Initial with no instance long
after its create is one Nova never learned of (the answer to its create was
lost, and it created another) and the reclaim pass deletes it; one a user
created is never deleted that way. Existing requests are counted as a
user's.

Revision ID: 0013
Revises: 0012
"""

from alembic import op
import sqlalchemy as sa

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade():
    op.add_column("arqs", sa.Column("created_by_service", sa.Boolean,
                                    nullable=False,
                                    server_default=sa.false()))
