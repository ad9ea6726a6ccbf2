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

"""Creating and removing mediated devices (the kernel's mdev sysfs ABI)."""

import os

from cyborg_lite.agent import privsep
from cyborg_lite.agent.privsep import checks


def _write(path, value):
    with open(path, "w") as handle:
        handle.write(value)


@privsep.sys_admin_pctxt.entrypoint
def create_mdev(sysfs_root, parent, mdev_type, mdev_uuid):
    """Write ``mdev_uuid`` to the ``create`` file of ``mdev_type`` of
    mdev parent ``parent``; the type must be one the parent lists.

    :raises ValueError: for a bad argument; OSError from the kernel.
    """
    parent = checks.pci_address(parent)
    mdev_type = checks.name(mdev_type, "mdev type")
    mdev_uuid = checks.mdev_uuid(mdev_uuid)
    types_dir = checks.sysfs_path(sysfs_root, "class", "mdev_bus", parent,
                                  "mdev_supported_types")
    listed = sorted(os.listdir(types_dir))
    if mdev_type not in listed:
        raise ValueError(f"mdev type {mdev_type} is not one {parent} lists "
                         f"({', '.join(listed) or 'none'})")
    _write(checks.sysfs_path(sysfs_root, "class", "mdev_bus", parent,
                             "mdev_supported_types", mdev_type, "create"),
           mdev_uuid)


@privsep.sys_admin_pctxt.entrypoint
def remove_mdev(sysfs_root, mdev_uuid):
    """Write ``1`` to the ``remove`` file of mediated device
    ``mdev_uuid``.

    :raises ValueError: for a bad argument; OSError from the kernel.
    """
    mdev_uuid = checks.mdev_uuid(mdev_uuid)
    _write(checks.sysfs_path(sysfs_root, "bus", "mdev", "devices", mdev_uuid,
                             "remove"), "1")
