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

"""Checks of what crosses into the privsep daemon.

Pure functions, run by the agent before a privileged call and again by the
daemon inside it. Each raises ValueError saying what is wrong (a plain
exception, so privsep hands it back as it is).
"""

import os
import re
import shutil
import stat
import uuid

from oslo_privsep import capabilities

_PCI_ADDRESS = re.compile(
    r"^(?P<domain>[0-9a-f]{4}):(?P<bus>[0-9a-f]{2}):"
    r"(?P<slot>[0-9a-f]{2})\.(?P<function>[0-7])$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")


def pci_address(value):
    """A PCI address like ``0000:5e:00.1``, lower-cased.

    :raises ValueError: for anything else.
    """
    text = str(value).lower()
    if not _PCI_ADDRESS.match(text):
        raise ValueError(f"{value!r} is not a PCI address like 0000:5e:00.0")
    return text


def split_pci_address(value):
    """``0000:5e:00.1`` -> dict of domain, bus, slot, function."""
    return _PCI_ADDRESS.match(pci_address(value)).groupdict()


def mdev_uuid(value):
    """A mediated device UUID in its canonical form."""
    try:
        return str(uuid.UUID(str(value)))
    except ValueError:
        raise ValueError(f"{value!r} is not a UUID")


def name(value, what):
    """A plain name (an mdev type, a shell partition): letters, digits and
    ``_.:-``, no path separator.

    :raises ValueError: naming ``what`` it was meant to be.
    """
    text = str(value)
    if not _NAME.match(text) or ".." in text:
        raise ValueError(f"{value!r} is not a valid {what}")
    return text


def _within(path, directory):
    directory = os.path.realpath(directory)
    return os.path.commonpath([path, directory]) == directory


def image_path(path, directories):
    """The real path of an image file lying under one of ``directories``.

    :raises ValueError: when it lies elsewhere (symlinks are followed
        first) or is not a regular file.
    """
    real = os.path.realpath(str(path))
    allowed = [d for d in directories if d]
    if not any(_within(real, d) for d in allowed):
        raise ValueError(
            f"image {path} is not under the agent's image directories "
            f"({', '.join(allowed) or 'none configured'})")
    if not os.path.isfile(real):
        raise ValueError(f"image {path} is not a regular file")
    return real


def _holds_capabilities():
    _permitted, effective, _inheritable = capabilities.get_caps()
    return bool(effective)


def sysfs_path(root, *parts):
    """``<root>/sys/<parts>``, resolved, and still under ``<root>/sys``.

    A root other than ``/`` (a fake tree, in tests) is honoured only by a
    process holding no capability: a privileged daemon writes the real
    sysfs or nothing.

    :raises ValueError: for a part with a separator, a path leaving sysfs,
        or a fake root in a privileged process.
    """
    for part in parts:
        if not part or "/" in part or part in (".", ".."):
            raise ValueError(f"{part!r} is not a sysfs path component")
    if os.path.realpath(root) != "/" and _holds_capabilities():
        raise ValueError(f"sysfs root {root!r}: only / is accepted by a "
                         f"privileged process")
    base = os.path.join(os.path.realpath(root), "sys")
    real = os.path.realpath(os.path.join(base, *parts))
    if not _within(real, base):
        raise ValueError(f"{os.path.join(base, *parts)} leads out of sysfs "
                         f"({real})")
    return real


def tool(path, expected):
    """The executable of vendor tool ``expected`` (e.g. ``fpgaconf``).

    A bare name is looked up on PATH. The file must be named ``expected``,
    be owned by root or by this process's user, and be writable by nobody
    else, so a privileged process never runs what another user could
    change.

    :raises FileNotFoundError: when there is no such executable.
    :raises ValueError: for another tool or a file others may change.
    """
    found = shutil.which(str(path)) if os.sep not in str(path) else str(path)
    if not found or not os.path.isfile(found):
        raise FileNotFoundError(2, "No such executable", str(path))
    real = os.path.realpath(found)
    if os.path.basename(found) != expected:
        raise ValueError(f"{path} is not the {expected} tool")
    info = os.stat(real)
    if info.st_uid not in (0, os.geteuid()) or info.st_mode & (
            stat.S_IWGRP | stat.S_IWOTH):
        raise ValueError(f"{real} may be changed by another user (owner "
                         f"uid {info.st_uid}, mode {oct(info.st_mode)}); "
                         f"refusing to run it privileged")
    return real
