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

"""Captured tool output and sysfs layouts, made into trees the drivers read.

The project's fixtures (``tests/data/drivers/<tool>/``, see its
SOURCES.rst) describe a layout as JSON: PCI functions (ids, class, SR-IOV
links), mdev parents with their types, FPGA class devices with their ports.
:func:`build` writes such a description as a sysfs tree. The renderers turn
the recordings others published (``../shared/realdata/drivers``, when
present) into the same description, as the recordings' SOURCES.md says.
"""

import json
import os
import pathlib
import re
import tarfile

REPO = pathlib.Path(__file__).resolve().parents[5]
FIXTURES = REPO / "tests" / "data" / "drivers"
#: the recordings of others: ``$IRONIC_ACCEL_REALDATA/../drivers`` (the
#: Redfish corpus test's variable), else ``../shared/realdata/drivers``.
REALDATA = (pathlib.Path(os.environ["IRONIC_ACCEL_REALDATA"]).parent
            / "drivers" if os.environ.get("IRONIC_ACCEL_REALDATA")
            else REPO.parent / "shared" / "realdata" / "drivers")
if not REALDATA.exists():
    REALDATA = pathlib.Path("/work/shared/realdata/drivers")


def fixture(tool, name):
    """The path of a project fixture."""
    return FIXTURES / tool / name


def load(tool, name):
    with open(fixture(tool, name)) as handle:
        return json.load(handle)


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(str(text) + "\n")


def _link(path, target):
    path.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, path)


def build(root, spec):
    """Write ``spec`` (see module doc) as a sysfs tree under ``root``;
    returns the root to give as ``[agent] sysfs_root``."""
    root = pathlib.Path(root)
    sys_dir = root / "sys"
    pci = sys_dir / "bus" / "pci" / "devices"
    for bdf, attrs in spec.get("pci", {}).items():
        for name in ("vendor", "device", "class"):
            if name in attrs:
                _write(pci / bdf / name, attrs[name])
        if attrs.get("physfn"):
            _link(pci / bdf / "physfn", f"../{attrs['physfn']}")
        for index, vf in enumerate(attrs.get("virtfn", [])):
            _link(pci / bdf / f"virtfn{index}", f"../{vf}")
    bus = sys_dir / "class" / "mdev_bus"
    bus.mkdir(parents=True, exist_ok=True)
    for parent, attrs in spec.get("mdev_bus", {}).items():
        physfn = spec.get("pci", {}).get(parent, {}).get("physfn")
        if physfn:
            _link(bus / parent / "physfn", f"../{physfn}")
        for mdev_type, values in attrs["types"].items():
            type_dir = bus / parent / "mdev_supported_types" / mdev_type
            type_dir.mkdir(parents=True, exist_ok=True)
            if "available_instances" in values:
                _write(type_dir / "available_instances",
                       values["available_instances"])
            (type_dir / "devices").mkdir(exist_ok=True)
            for _ in range(values.get("devices", 0)):
                (type_dir / "devices" / os.urandom(8).hex()).mkdir()
    for fpga in spec.get("fpga", []):
        device_dir = sys_dir / "class" / fpga["class"] / fpga["name"]
        device_dir.mkdir(parents=True, exist_ok=True)
        _link(device_dir / "device",
              os.path.relpath(pci / fpga["device"], device_dir))
        if fpga.get("fme"):
            (device_dir / fpga["fme"]).mkdir()
        for port, values in fpga["ports"].items():
            _write(device_dir / port / "afu_id", values["afu_id"])
    return str(root)


# --- the recordings of others -------------------------------------------

def realdata(*parts):
    """A file of ``../shared/realdata/drivers``, or None when absent."""
    path = REALDATA.joinpath(*parts)
    return path if path.exists() else None


def unpack_opae(archive, target):
    """An OPAE mock archive unpacked; its sysfs root (``<target>/tmp``)."""
    with tarfile.open(archive) as tar:
        tar.extractall(target, filter="tar")
    return str(pathlib.Path(target) / "tmp")


def xbmgmt_output(path):
    """The pasted ``xbmgmt examine`` output: from after the command line (or
    the start) to the next shell prompt."""
    lines = pathlib.Path(path).read_text().splitlines()
    start = next((i + 1 for i, line in enumerate(lines)
                  if "xbmgmt examine" in line), 0)
    end = next((i for i in range(start, len(lines))
                if re.match(r"^\S+@\S+.*\$ ", lines[i])), len(lines))
    return "\n".join(lines[start:end]) + "\n"


def _vendor_of(types):
    prefixes = {name.split("-", 1)[0] for name in types}
    return {"nvidia": "0x10de", "i915": "0x8086"}.get(
        prefixes.pop() if len(prefixes) == 1 else "", "0x1af4")


def mdevctl_types(path):
    """``mdevctl types`` output as a spec (vendor from the type prefix)."""
    parents, parent, mdev_type = {}, None, None
    for line in pathlib.Path(path).read_text().splitlines():
        if not line.strip() or line.startswith("$"):
            continue
        indent = len(line) - len(line.lstrip())
        text = line.strip()
        if indent == 0:
            parent = parents.setdefault(text, {})
        elif indent == 2:
            mdev_type = parent.setdefault(text, {})
        elif text.startswith("Available instances:"):
            mdev_type["available_instances"] = int(text.split(":")[1])
    spec = {"pci": {}, "mdev_bus": {}}
    for name, types in parents.items():
        spec["mdev_bus"][name] = {"types": types}
        if re.match(r"^[0-9a-f]{4}:", name):
            spec["pci"][name] = {"vendor": _vendor_of(types),
                                 "device": "0x0000", "class": "0x030000"}
    return spec
