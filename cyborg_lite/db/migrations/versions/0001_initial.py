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

"""Initial schema: device profiles, devices, deployables, attach handles,
attributes, accelerator requests.

Revision ID: 0001
Revises:
"""

from alembic import op
import sqlalchemy as sa

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _timestamps():
    return [sa.Column("created_at", sa.DateTime, nullable=False),
            sa.Column("updated_at", sa.DateTime, nullable=True)]


def upgrade():
    op.create_table(
        "device_profiles",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("uuid", sa.String(36), nullable=False, unique=True),
        sa.Column("name", sa.String(255), nullable=False, unique=True),
        sa.Column("description", sa.Text, nullable=True),
        sa.Column("groups", sa.JSON, nullable=False),
        *_timestamps())
    op.create_table(
        "devices",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("uuid", sa.String(36), nullable=False, unique=True),
        sa.Column("source_id", sa.String(64), nullable=False),
        sa.Column("type", sa.String(32), nullable=False),
        sa.Column("vendor", sa.String(255), nullable=False),
        sa.Column("model", sa.String(255), nullable=False),
        sa.Column("std_board_info", sa.JSON, nullable=False),
        sa.Column("vendor_board_info", sa.Text, nullable=True),
        sa.Column("hostname", sa.String(255), nullable=False, index=True),
        sa.Column("pci_address", sa.String(16), nullable=False),
        sa.Column("program_mode", sa.String(16), nullable=False),
        sa.Column("firmware_version", sa.String(255), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("retired", sa.Boolean, nullable=False),
        *_timestamps(),
        sa.UniqueConstraint("hostname", "source_id"))
    op.create_table(
        "deployables",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("uuid", sa.String(36), nullable=False, unique=True),
        sa.Column("device_id", sa.Integer, sa.ForeignKey("devices.id"),
                  nullable=False, index=True),
        sa.Column("region_id", sa.String(64), nullable=False),
        sa.Column("parent_id", sa.Integer, nullable=True),
        sa.Column("root_id", sa.Integer, nullable=True),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("num_accelerators", sa.Integer, nullable=False),
        sa.Column("rp_uuid", sa.String(36), nullable=False, unique=True),
        sa.Column("resource_class", sa.String(255), nullable=False),
        sa.Column("driver_name", sa.String(255), nullable=True),
        sa.Column("bitstream_id", sa.String(36), nullable=True),
        sa.Column("function_id", sa.String(255), nullable=True),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("retired", sa.Boolean, nullable=False),
        *_timestamps())
    op.create_table(
        "attach_handles",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("uuid", sa.String(36), nullable=False, unique=True),
        sa.Column("deployable_id", sa.Integer,
                  sa.ForeignKey("deployables.id"), nullable=False),
        sa.Column("type", sa.String(8), nullable=False),
        sa.Column("pci_address", sa.String(16), nullable=False),
        sa.Column("mdev_type", sa.String(64), nullable=False),
        sa.Column("physical_network", sa.String(255), nullable=True),
        sa.Column("in_use", sa.Boolean, nullable=False),
        sa.Column("arq_id", sa.Integer, nullable=True, unique=True),
        sa.Column("retired", sa.Boolean, nullable=False),
        *_timestamps(),
        sa.UniqueConstraint("deployable_id", "pci_address", "mdev_type"),
        sa.Index("ix_attach_handles_free", "deployable_id", "in_use"))
    op.create_table(
        "attributes",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("uuid", sa.String(36), nullable=False, unique=True),
        sa.Column("deployable_id", sa.Integer,
                  sa.ForeignKey("deployables.id"), nullable=False,
                  index=True),
        sa.Column("key", sa.String(255), nullable=False),
        sa.Column("value", sa.String(255), nullable=False),
        *_timestamps())
    op.create_table(
        "arqs",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("uuid", sa.String(36), nullable=False, unique=True),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("device_profile_id", sa.Integer,
                  sa.ForeignKey("device_profiles.id"), nullable=False,
                  index=True),
        sa.Column("device_profile_name", sa.String(255), nullable=False),
        sa.Column("device_profile_group_id", sa.Integer, nullable=False),
        sa.Column("project_id", sa.String(255), nullable=True, index=True),
        sa.Column("hostname", sa.String(255), nullable=True),
        sa.Column("device_rp_uuid", sa.String(36), nullable=True),
        sa.Column("instance_uuid", sa.String(36), nullable=True,
                  index=True),
        sa.Column("deployable_id", sa.Integer, nullable=True),
        sa.Column("notification", sa.String(16), nullable=True),
        *_timestamps())
