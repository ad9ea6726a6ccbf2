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


"""Device enable/disable: the device status and Placement ``reserved``.

Disabling a device (``maintaining``) sets ``reserved = total`` on the
resource provider of each of its deployables, so the scheduler places no new
instance there; enabling sets ``reserved`` back to 0. cyborg_lite owns
``reserved`` on those providers; the inventory reporter keeps what it finds
(:mod:`cyborg_lite.programming.providers`).

Placement is written first, the status only after every provider took the
change. When Placement fails (unreachable, or refusing after the
generation-conflict retries), the call fails with 503 naming the provider,
the status stays what it was, and repeating the call is the retry: every
write is idempotent. So the status never claims a change Placement has not
made.
"""

from oslo_log import log as logging

from cyborg_lite import exception
from cyborg_lite import states
from cyborg_lite.db import deployables as deployable_db
from cyborg_lite.db import devices as device_db

LOG = logging.getLogger(__name__)

class PlacementUpdateFailed(exception.CyborgLiteException):
    code = 503
    msg_fmt = ("Could not %(action)s device %(device)s in Placement: "
               "%(error)s. Resource providers done: %(done)s; not done: "
               "%(pending)s. The device status stays %(status)r; repeat "
               "the request to retry.")


def _providers_of(session, device_uuid):
    device = device_db.get(session, device_uuid)
    return device.status, deployable_db.providers_of_device(session,
                                                            device.id)


def set_status(db, device_uuid, status, providers=None):
    """Enable (``enabled``) or disable (``maintaining``) a device.

    :param db: the :class:`cyborg_lite.db.engine.Database`.
    :param status: a :class:`cyborg_lite.states.DeviceStatus`.
    :param providers: a
        :class:`cyborg_lite.programming.providers.RegionProviders` (its
        ``reserve(rp_uuid, reserve)``), or None without Placement.
    :raises DeviceNotFound: (404)
    :raises PlacementUpdateFailed: (503) the status is left unchanged.
    :returns: the device row.
    """
    if status not in tuple(states.DeviceStatus):
        raise ValueError(f"unknown device status {status!r}")
    current, deployables = db.run(_providers_of, device_uuid)
    reserve = status == states.DeviceStatus.MAINTAINING
    if providers is not None and providers.enabled:
        # NOTE(cyborg_lite): a region being programmed, or left in error,
        # has reserved = total on the programmer's behalf; enabling the
        # device must not hand it to the scheduler. The programmer restores
        # it when it is done (if the device is enabled by then).
        targets = [rp for rp, state in deployables
                   if reserve or state == states.RegionState.READY]
        done = []
        for rp_uuid in targets:
            try:
                providers.reserve(rp_uuid, reserve=reserve)
            except Exception as error:
                LOG.error("Setting reserved on %s for device %s failed: %s",
                          rp_uuid, device_uuid, error)
                raise PlacementUpdateFailed(
                    action="disable" if reserve else "enable",
                    device=device_uuid, error=error,
                    done=", ".join(done) or "none",
                    pending=", ".join(targets[len(done):]), status=current)
            done.append(rp_uuid)
    device = device_db.set_status(db, device_uuid, status)
    if reserve and providers is not None and providers.enabled:
        # NOTE(cyborg_lite): a programming run that read the device enabled
        # before this status commit may have restored reserved = 0 since the
        # pass above; the run checks the status again after it restores, and
        # this pass covers a restore that came before that check.
        for rp_uuid in targets:
            try:
                providers.reserve(rp_uuid, reserve=True)
            except Exception as error:
                LOG.warning("Device %s is disabled but reserving %s again "
                            "failed (%s); repeat the disable to set it",
                            device_uuid, rp_uuid, error)
    return device
