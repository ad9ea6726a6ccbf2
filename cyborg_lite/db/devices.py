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

"""Queries of the ``devices`` table."""

import sqlalchemy as sa

from cyborg_lite import exception
from cyborg_lite.db import engine
from cyborg_lite.db import models


@engine.reader
def get_all(session, type=None, vendor=None, hostname=None, limit=None,
                marker=None):
    """Devices filtered in SQL."""
    stmt = sa.select(models.Device)
    for column, value in ((models.Device.type, type),
                          (models.Device.vendor, vendor),
                          (models.Device.hostname, hostname)):
        if value is not None:
            stmt = stmt.where(column == value)
    return engine.paginate(session, stmt, models.Device, limit, marker)


@engine.reader
def get(session, device_uuid):
    """One device by uuid; :raises DeviceNotFound:"""
    device = session.execute(
        sa.select(models.Device).where(models.Device.uuid == device_uuid)
    ).scalar_one_or_none()
    if device is None:
        raise exception.DeviceNotFound(ident=device_uuid)
    return device


@engine.transactional
def set_status(session, device_uuid, status):
    """Set a device ``enabled`` or ``maintaining``."""
    device = get(session, device_uuid)
    device.status = status
    return device


def status_of_deployable(session, deployable_id):
    """The status of the device a deployable belongs to, or None."""
    return session.execute(
        sa.select(models.Device.status)
        .join(models.Deployable,
              models.Deployable.device_id == models.Device.id)
        .where(models.Deployable.id == deployable_id)
    ).scalar_one_or_none()
