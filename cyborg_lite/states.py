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

"""The named states of devices, regions and Nova notifications.

Constants only, importable from any layer (the database layer included).
Each is a :class:`enum.StrEnum`: a member is the very string stored in the
database and shown by the API, so ``DeviceStatus.ENABLED == "enabled"``.
The ARQ states and their transitions live in :mod:`cyborg_lite.arq_states`;
the region's transitions in :mod:`cyborg_lite.programming.regions`.
"""

import enum


class DeviceStatus(enum.StrEnum):
    """What an operator allows of a device (``POST .../enable|disable``)."""

    #: The device serves binds.
    ENABLED = "enabled"
    #: Disabled by the operator: no new bind, no programming; what is bound
    #: stays bound. Its regions' providers are reserved in Placement.
    MAINTAINING = "maintaining"


class RegionState(enum.StrEnum):
    """Where a region (deployable) is in its programming life cycle."""

    #: Runs what ``function_id`` / ``bitstream_id`` say; binds may use it.
    READY = "ready"
    #: Being loaded with ``target_function_id`` / ``target_bitstream_id``
    #: under an owner's lease; binds that wait for it are ``BindStarted``.
    PROGRAMMING = "programming"
    #: The last programming failed (``last_error`` says why); reserved in
    #: Placement until an operator programs it again.
    ERROR = "error"


class Notification(enum.StrEnum):
    """Where an ARQ's ``accelerator-request-bound`` event to Nova is.

    NULL in the database means no event is due.
    """

    #: Due; not claimed by any API worker yet.
    PENDING = "pending"
    #: Claimed by one API worker, which is sending it.
    SENDING = "sending"
    #: Nova accepted it.
    SENT = "sent"
    #: Nova refused it or could not be reached; sent again after a grace.
    FAILED = "failed"
