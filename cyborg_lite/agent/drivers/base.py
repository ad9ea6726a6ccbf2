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

"""The narrow interface every accelerator driver implements.

A driver knows one family of devices on this host. It discovers them with
their attach handles (found in-band: VF BDFs exist only once SR-IOV is
enabled, mdev types come from sysfs), reads the function a region runs,
programs and resets regions; vendor quirks stay inside the driver.

Devices and readings are plain JSON-able dicts, shaped like the inventory
document (accel_common.inventory) so the API matches them to the devices
Ironic reported by PCI address.
"""

import abc
import collections

from cyborg_lite import states
from cyborg_lite.agent import exception

#: One programmable region: the device's (PF) PCI address and region id.
Region = collections.namedtuple("Region", ["pci_address", "region_id"])

#: Region states a reading can report (the region states of
#: :class:`cyborg_lite.states.RegionState`).
READY = states.RegionState.READY
PROGRAMMING = states.RegionState.PROGRAMMING
ERROR = states.RegionState.ERROR


def reading(function_id, state=READY, detail=None):
    """A current-function reading: ``{"function_id", "state", "detail"}``.

    ``function_id`` is ``None`` when nothing is loaded or when the state is
    not ``ready`` (the function is then unknown, never guessed).
    """
    if state != READY:
        function_id = None
    return {"function_id": function_id, "state": state, "detail": detail}


def normalize_function_id(function_id):
    """Compare function ids the way vendors print them: case and dashes
    do not matter (OPAE prints AFU ids as 32 hex digits without dashes)."""
    if function_id is None:
        return None
    return str(function_id).replace("-", "").strip().lower()


class AcceleratorDriver(abc.ABC):
    """Base class of the drivers in the ``cyborg_lite.drivers`` group."""

    #: Entry-point name; also reported as each device's ``driver``.
    name = None

    def __init__(self, conf):
        self.conf = conf

    @abc.abstractmethod
    def discover(self):
        """Devices of this family on the host.

        :returns: a list of dicts with ``type``, ``vendor_id``,
            ``product_id``, ``pci_address``, ``program_mode`` and
            ``regions`` (each ``id``, ``function_id``, ``state`` and
            ``attach_handles`` of type ``PCI`` or ``MDEV``).
        """

    @abc.abstractmethod
    def current_function(self, region):
        """What ``region`` runs now, read from the device.

        :param region: a :class:`Region`.
        :returns: a :func:`reading`.
        :raises RegionNotFound: when the device or region does not exist.
        """

    def program(self, region, image_path, function_id):
        """Load ``image_path`` into ``region`` and return when done.

        The caller reads the function back with :meth:`current_function`
        to confirm it.

        :param function_id: the function the image carries, or ``None``.
        :raises ProgrammingFailed, ToolFailed, ToolNotFound:
        """
        raise exception.NotSupported(driver=self.name,
                                     operation="program regions")

    def reset(self, region):
        """Bring ``region`` back to a known state (no function loaded)."""
        raise exception.NotSupported(driver=self.name,
                                     operation="reset regions")

    def create_mdev(self, pci_address, mdev_type, mdev_uuid):
        """Create a mediated device of ``mdev_type`` on ``pci_address``."""
        raise exception.NotSupported(driver=self.name,
                                     operation="create mediated devices")

    def remove_mdev(self, pci_address, mdev_uuid):
        """Remove the mediated device ``mdev_uuid``."""
        raise exception.NotSupported(driver=self.name,
                                     operation="remove mediated devices")
