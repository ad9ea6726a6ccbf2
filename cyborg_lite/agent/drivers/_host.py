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

"""Running vendor tools and reading PCI sysfs, shared by the real drivers.

Reading sysfs and running read-only tools happen here, as the agent's own
user; what needs privilege goes through :func:`privileged` into the
functions of :mod:`cyborg_lite.agent.privsep`.
"""

import os
import re
import subprocess
import tempfile

from cyborg_lite.agent import exception
from cyborg_lite.agent import privsep

PCI_ADDRESS = re.compile(
    r"^(?P<domain>[0-9a-fA-F]{4}):(?P<bus>[0-9a-fA-F]{2}):"
    r"(?P<slot>[0-9a-fA-F]{2})\.(?P<function>[0-7])$")


def image_dirs(conf):
    """The directories images to program may lie in: the catalog, and the
    download directory (the system's temporary directory when
    ``[agent] image_cache_dir`` is unset)."""
    return [conf.agent.image_catalog_dir,
            conf.agent.image_cache_dir or tempfile.gettempdir()]


def check(what, func, *args):
    """``func(*args)`` of :mod:`~cyborg_lite.agent.privsep.checks`, its
    ValueError turned into InvalidRequest (the agent's side of a check)."""
    try:
        return func(*args)
    except ValueError as exc:
        raise exception.InvalidRequest(reason=f"{what}: {exc}")


def privileged(tool, func, *args):
    """Run the privileged tool function ``func(*args)`` and return the
    tool's standard output.

    :param tool: the command as a user would read it, for messages.
    :raises HelperNotStarted: when the privsep daemon cannot start.
    :raises InvalidRequest: when the daemon refuses an argument.
    :raises ToolNotFound: when the tool cannot be executed.
    :raises ToolFailed: naming the tool, its exit code and its stderr.
    """
    privsep.start()
    try:
        exit_code, stdout, stderr = func(*args)
    except ValueError as exc:
        raise exception.InvalidRequest(reason=f"{tool}: {exc}")
    except (FileNotFoundError, PermissionError) as exc:
        raise exception.ToolNotFound(tool=tool.split()[0],
                                     reason=exc.strerror or str(exc))
    if exit_code != 0:
        stderr = (stderr or stdout or "").strip()
        raise exception.ToolFailed(
            tool=tool, exit_code="none" if exit_code is None else exit_code,
            stderr=stderr or "(no output)")
    return stdout


def run_tool(tool, args, timeout):
    """Run a vendor tool and return its standard output.

    :raises ToolNotFound: when the tool cannot be executed.
    :raises ToolFailed: naming the tool, its exit code and its stderr.
    """
    command = [tool] + [str(arg) for arg in args]
    try:
        result = subprocess.run(command, capture_output=True, text=True,
                                timeout=timeout, check=False)
    except (FileNotFoundError, PermissionError) as exc:
        raise exception.ToolNotFound(tool=tool, reason=exc.strerror)
    except subprocess.TimeoutExpired:
        raise exception.ToolFailed(
            tool=" ".join(command), exit_code="none",
            stderr=f"still running after {timeout} s, killed")
    if result.returncode != 0:
        stderr = (result.stderr or result.stdout or "").strip()
        raise exception.ToolFailed(tool=" ".join(command),
                                   exit_code=result.returncode,
                                   stderr=stderr or "(no output)")
    return result.stdout


class Sysfs:
    """Reads under a configurable root, so tests point it at a fake tree."""

    def __init__(self, root):
        self.root = root

    def path(self, *parts):
        """Absolute path of ``sys/<parts>`` under the root."""
        return os.path.join(self.root, "sys", *parts)

    def read(self, path, default=None):
        """Stripped content of a sysfs file, ``default`` when absent."""
        try:
            with open(path) as handle:
                return handle.read().strip()
        except FileNotFoundError:
            return default
        except OSError as exc:
            raise exception.SysfsError(path=path, reason=exc.strerror)

    def pci_device(self, pci_address):
        """sysfs directory of one PCI function."""
        return self.path("bus", "pci", "devices", pci_address)

    def pci_ids(self, pci_address):
        """``(vendor_id, product_id)`` as ``0x....`` strings."""
        base = self.pci_device(pci_address)
        return (self.read(os.path.join(base, "vendor"), "0x0000"),
                self.read(os.path.join(base, "device"), "0x0000"))

    def virtual_functions(self, pci_address):
        """BDFs of the SR-IOV VFs a PF has enabled, in VF order."""
        base = self.pci_device(pci_address)
        try:
            names = os.listdir(base)
        except FileNotFoundError:
            return []
        links = sorted((n for n in names if re.match(r"^virtfn\d+$", n)),
                       key=lambda n: int(n[len("virtfn"):]))
        return [os.path.basename(os.readlink(os.path.join(base, n)))
                for n in links]

    def physical_function(self, pci_address):
        """The PF of an SR-IOV VF, None for anything else."""
        return self.link_name(os.path.join(self.pci_device(pci_address),
                                           "physfn"))

    def link_name(self, path):
        """Basename of a symlink's target (e.g. a ``device`` link)."""
        try:
            return os.path.basename(os.readlink(path))
        except OSError:
            return None

    def pci_functions(self):
        """BDFs of every PCI function the host has, sorted."""
        try:
            names = os.listdir(self.path("bus", "pci", "devices"))
        except FileNotFoundError:
            return []
        return sorted(n.lower() for n in names if PCI_ADDRESS.match(n))

    def pci_attr(self, pci_address, *parts, default=None):
        """Stripped content of ``<function>/<parts>``, ``default`` when
        absent (e.g. ``pci_attr(bdf, "class")``)."""
        return self.read(os.path.join(self.pci_device(pci_address), *parts),
                         default)

    def driver(self, pci_address):
        """Name of the kernel driver bound to a function, None when none."""
        return self.link_name(os.path.join(self.pci_device(pci_address),
                                           "driver"))

    def iommu_group(self, pci_address):
        """The function's IOMMU group number, None without an IOMMU."""
        return self.link_name(os.path.join(self.pci_device(pci_address),
                                           "iommu_group"))

    def iommu_group_members(self, group):
        """BDFs of the functions in an IOMMU group, sorted."""
        try:
            names = os.listdir(self.path("kernel", "iommu_groups", group,
                                         "devices"))
        except FileNotFoundError:
            return []
        return sorted(n.lower() for n in names if PCI_ADDRESS.match(n))

    def netdevs(self, pci_address):
        """Names of the network interfaces of a function, sorted."""
        try:
            return sorted(os.listdir(os.path.join(
                self.pci_device(pci_address), "net")))
        except (FileNotFoundError, NotADirectoryError):
            return []

    def block_devices(self, pci_address):
        """Block devices (disks and partitions) below a function, sorted."""
        class_dir = self.path("class", "block")
        try:
            names = os.listdir(class_dir)
        except FileNotFoundError:
            return []
        below = f"/{pci_address.lower()}/"
        found = []
        for name in names:
            try:
                target = os.readlink(os.path.join(class_dir, name))
            except OSError:
                continue
            if below in target.lower():
                found.append(name)
        return sorted(found)
