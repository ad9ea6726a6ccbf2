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

"""SQLAlchemy models of cyborg_lite.

The schema itself is created by the alembic migrations in
``cyborg_lite/db/migrations``; these classes must match them (a test compares
both).
"""

import datetime

import sqlalchemy as sa
from sqlalchemy import orm

from cyborg_lite import states


def utcnow():
    """Naive UTC now; every timestamp column holds naive UTC."""
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


class Base(orm.DeclarativeBase):
    pass


class _Timestamps:
    created_at: orm.Mapped[datetime.datetime] = orm.mapped_column(
        sa.DateTime, default=utcnow, nullable=False)
    updated_at: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        sa.DateTime, onupdate=utcnow, nullable=True)


class DeviceProfile(_Timestamps, Base):
    __tablename__ = "device_profiles"

    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    uuid: orm.Mapped[str] = orm.mapped_column(sa.String(36), unique=True)
    name: orm.Mapped[str] = orm.mapped_column(sa.String(255), unique=True)
    description: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    groups: orm.Mapped[list] = orm.mapped_column(sa.JSON, nullable=False)


class Device(_Timestamps, Base):
    __tablename__ = "devices"
    __table_args__ = (sa.UniqueConstraint("hostname", "source_id"),)

    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    uuid: orm.Mapped[str] = orm.mapped_column(sa.String(36), unique=True)
    #: the device id in the inventory document (e.g. ``fpga0``).
    source_id: orm.Mapped[str] = orm.mapped_column(sa.String(64))
    type: orm.Mapped[str] = orm.mapped_column(sa.String(32))
    vendor: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    model: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    std_board_info: orm.Mapped[dict] = orm.mapped_column(sa.JSON)
    vendor_board_info: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    hostname: orm.Mapped[str] = orm.mapped_column(sa.String(255),
                                                  index=True)
    pci_address: orm.Mapped[str] = orm.mapped_column(sa.String(16))
    program_mode: orm.Mapped[str] = orm.mapped_column(sa.String(16))
    firmware_version: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(255))
    #: a :class:`cyborg_lite.states.DeviceStatus` (device enable/disable).
    status: orm.Mapped[str] = orm.mapped_column(
        sa.String(16), default=states.DeviceStatus.ENABLED)
    #: gone from the inventory while a handle was still in use.
    retired: orm.Mapped[bool] = orm.mapped_column(sa.Boolean, default=False)
    #: what the inventory document last said of the card's health (its
    #: BMC's ``Status.Health``: ``OK``, ``Warning``, ``Critical``), NULL
    #: when it said nothing.
    health: orm.Mapped[str | None] = orm.mapped_column(sa.String(16))


class Deployable(_Timestamps, Base):
    __tablename__ = "deployables"

    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    uuid: orm.Mapped[str] = orm.mapped_column(sa.String(36), unique=True)
    device_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey("devices.id"), index=True)
    #: the region id in the inventory document.
    region_id: orm.Mapped[str] = orm.mapped_column(sa.String(64))
    parent_id: orm.Mapped[int | None] = orm.mapped_column(sa.Integer)
    root_id: orm.Mapped[int | None] = orm.mapped_column(sa.Integer)
    name: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    num_accelerators: orm.Mapped[int] = orm.mapped_column(sa.Integer)
    rp_uuid: orm.Mapped[str] = orm.mapped_column(sa.String(36), unique=True)
    resource_class: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    driver_name: orm.Mapped[str | None] = orm.mapped_column(sa.String(255))
    bitstream_id: orm.Mapped[str | None] = orm.mapped_column(sa.String(36))
    function_id: orm.Mapped[str | None] = orm.mapped_column(sa.String(255))
    #: the last non-null ``function_id`` the inventory document reported
    #: (what the BMC saw); the sync takes the document's value only when it
    #: differs from this one.
    reported_function_id: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(255))
    #: a :class:`cyborg_lite.states.RegionState`; its transitions are in
    #: :mod:`cyborg_lite.programming.regions`.
    state: orm.Mapped[str] = orm.mapped_column(
        sa.String(16), default=states.RegionState.READY, index=True)
    retired: orm.Mapped[bool] = orm.mapped_column(sa.Boolean, default=False)
    #: what a running programming loads (one of the two), else NULL.
    target_function_id: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(255))
    target_bitstream_id: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(36))
    #: the API process running the programming, and its lease: a row in
    #: ``programming`` whose heartbeat is stale belongs to the reconciler.
    programming_owner: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(64))
    heartbeat_at: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        sa.DateTime)
    #: how many times the reconciler started the running programming again
    #: (its API process died before the agent had it done); 0 at each
    #: new run.
    relaunches: orm.Mapped[int] = orm.mapped_column(
        sa.Integer, default=0, server_default="0")
    #: why the region is in ``error`` (or the last Placement problem).
    last_error: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    #: what Nova's device profile lookups routed here, while idle: the
    #: content the region is kept for (both NULL: no function), until
    #: ``assigned_until`` (NULL: not assigned). See
    #: :mod:`cyborg_lite.scheduling.routing`.
    assigned_function_id: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(255))
    assigned_bitstream_id: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(36))
    assigned_until: orm.Mapped[datetime.datetime | None] = (
        orm.mapped_column(sa.DateTime))
    #: the lock trait last written to its provider (None: none), by any
    #: API process: a lookup's answer relies on it.
    lock_written: orm.Mapped[str | None] = orm.mapped_column(sa.String(255))


class AttachHandle(_Timestamps, Base):
    __tablename__ = "attach_handles"
    __table_args__ = (
        sa.UniqueConstraint("deployable_id", "pci_address", "mdev_type",
                            "mdev_index", name="uq_attach_handles_instance"),
        sa.Index("ix_attach_handles_free", "deployable_id", "in_use"),
    )

    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    uuid: orm.Mapped[str] = orm.mapped_column(sa.String(36), unique=True)
    deployable_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey("deployables.id"))
    #: ``PCI`` or ``MDEV``.
    type: orm.Mapped[str] = orm.mapped_column(sa.String(8))
    pci_address: orm.Mapped[str] = orm.mapped_column(sa.String(16))
    #: '' for PCI handles, so the unique constraint works on every DB.
    mdev_type: orm.Mapped[str] = orm.mapped_column(sa.String(64),
                                                   default="")
    #: which of the parent's instances of ``mdev_type`` this handle is
    #: (0, 1, ...: an MDEV handle is listed once per possible instance);
    #: 0 for PCI handles. Keeps each instance's uuid, and so the mdev Nova
    #: names after it, across syncs.
    mdev_index: orm.Mapped[int] = orm.mapped_column(
        sa.Integer, default=0, server_default="0")
    physical_network: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(255))
    in_use: orm.Mapped[bool] = orm.mapped_column(sa.Boolean, default=False)
    #: the ARQ holding the handle (``arqs.id``), or NULL.
    arq_id: orm.Mapped[int | None] = orm.mapped_column(sa.Integer,
                                                       unique=True)
    retired: orm.Mapped[bool] = orm.mapped_column(sa.Boolean, default=False)


class Attribute(_Timestamps, Base):
    __tablename__ = "attributes"

    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    uuid: orm.Mapped[str] = orm.mapped_column(sa.String(36), unique=True)
    deployable_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey("deployables.id"), index=True)
    key: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    value: orm.Mapped[str] = orm.mapped_column(sa.String(255))


class ARQ(_Timestamps, Base):
    __tablename__ = "arqs"

    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    uuid: orm.Mapped[str] = orm.mapped_column(sa.String(36), unique=True)
    state: orm.Mapped[str] = orm.mapped_column(sa.String(16))
    device_profile_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey("device_profiles.id"), index=True)
    device_profile_name: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    device_profile_group_id: orm.Mapped[int] = orm.mapped_column(sa.Integer)
    project_id: orm.Mapped[str | None] = orm.mapped_column(sa.String(255),
                                                           index=True)
    hostname: orm.Mapped[str | None] = orm.mapped_column(sa.String(255))
    device_rp_uuid: orm.Mapped[str | None] = orm.mapped_column(sa.String(36))
    instance_uuid: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(36), index=True)
    deployable_id: orm.Mapped[int | None] = orm.mapped_column(sa.Integer)
    #: Nova event bookkeeping: NULL (none due), ``pending``, ``sending``,
    #: ``sent`` or ``failed``; claimed with a conditional update so two
    #: API workers never both send an ARQ's event.
    notification: orm.Mapped[str | None] = orm.mapped_column(sa.String(16),
                                                             index=True)
    #: created with a service token (Nova's): reaped when it stays
    #: ``Initial`` with no instance (:mod:`cyborg_lite.db.arq_reaper`).
    created_by_service: orm.Mapped[bool] = orm.mapped_column(
        sa.Boolean, default=False, server_default=sa.false())


class FunctionPool(_Timestamps, Base):
    """Operator policy: keep ``min_ready`` idle regions running a function."""

    __tablename__ = "function_pools"

    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    name: orm.Mapped[str] = orm.mapped_column(sa.String(255), unique=True)
    function_id: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    min_ready: orm.Mapped[int] = orm.mapped_column(sa.Integer)
    #: only regions of this resource class count (NULL: any).
    resource_class: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(255))


class PeriodicLease(Base):
    """Who runs a periodic task (one API worker at a time), until when."""

    __tablename__ = "periodic_leases"

    name: orm.Mapped[str] = orm.mapped_column(sa.String(64),
                                              primary_key=True)
    owner: orm.Mapped[str] = orm.mapped_column(sa.String(64))
    expires_at: orm.Mapped[datetime.datetime] = orm.mapped_column(
        sa.DateTime)
    #: when the last pass ended, and how (one line), for the health check.
    last_ended_at: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        sa.DateTime)
    last_outcome: orm.Mapped[str | None] = orm.mapped_column(sa.String(255))


class CyborgImported(Base):
    """A row ``cyborg-lite-manage cyborg import`` imported (by kind and
    Cyborg uuid): imported before, even if deleted since."""

    __tablename__ = "cyborg_imported"

    kind: orm.Mapped[str] = orm.mapped_column(sa.String(32),
                                              primary_key=True)
    uuid: orm.Mapped[str] = orm.mapped_column(sa.String(36),
                                              primary_key=True)
    imported_at: orm.Mapped[datetime.datetime] = orm.mapped_column(
        sa.DateTime, default=utcnow)


class InventoryApplied(Base):
    """The inventory document last applied for a host: its node and the
    fingerprint of its content (see :mod:`cyborg_lite.inventory.ironic`)."""

    __tablename__ = "inventory_applied"

    hostname: orm.Mapped[str] = orm.mapped_column(sa.String(255),
                                                  primary_key=True)
    node_uuid: orm.Mapped[str] = orm.mapped_column(sa.String(36))
    fingerprint: orm.Mapped[str] = orm.mapped_column(sa.String(64))
    applied_at: orm.Mapped[datetime.datetime] = orm.mapped_column(
        sa.DateTime, default=utcnow)


class SchedulingLookup(Base):
    """A device profile group Nova looked up and has not bound yet: the
    content it was routed to (a lock trait) and the units it will take,
    counted against that content's free handles until a bind consumes it
    or it expires (:mod:`cyborg_lite.scheduling.routing`)."""

    __tablename__ = "scheduling_lookups"

    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    lock_trait: orm.Mapped[str] = orm.mapped_column(sa.String(255),
                                                    index=True)
    units: orm.Mapped[int] = orm.mapped_column(sa.Integer)
    #: a function pool's lookup (counted, not routed): the function trait
    #: its group requires.
    function_trait: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(255), nullable=True)
    created_at: orm.Mapped[datetime.datetime] = orm.mapped_column(
        sa.DateTime)
    expires_at: orm.Mapped[datetime.datetime] = orm.mapped_column(
        sa.DateTime, index=True)


class SchedulingRouter(Base):
    """One row (``id = 1``), locked by each lookup's routing so that two
    API workers never route on the same counts."""

    __tablename__ = "scheduling_router"

    id: orm.Mapped[int] = orm.mapped_column(primary_key=True,
                                            autoincrement=False)


class AgentContact(Base):
    """What the API last heard from a host's agent (written by the API
    processes, which call the agents; see
    :mod:`cyborg_lite.db.agent_contacts`)."""

    __tablename__ = "agent_contacts"

    hostname: orm.Mapped[str] = orm.mapped_column(sa.String(255),
                                                  primary_key=True)
    #: when a call to the agent last got an answer.
    answered_at: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        sa.DateTime)
    #: the first call left unanswered since the last answer; None while
    #: the agent answers.
    silent_since: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        sa.DateTime)
    #: when the oldest call still waiting for an answer was sent.
    waiting_since: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        sa.DateTime)
    #: when a background probe of a silent agent was last sent.
    probed_at: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        sa.DateTime)
    #: why the last unanswered call got no answer (one line).
    last_error: orm.Mapped[str | None] = orm.mapped_column(sa.String(255))
