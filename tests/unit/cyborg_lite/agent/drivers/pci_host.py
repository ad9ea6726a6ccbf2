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

"""Recorded PCI listings of real hosts, rendered as the sysfs tree they show.

``tests/data/drivers/pci/`` holds ``lspci`` listings (and an SR-IOV
operator's node state, a ``qat_service status``) others recorded, each with
its source (SOURCES.rst there). :func:`render` writes one as
``sys/bus/pci/devices/<bdf>/`` with ``vendor``, ``device``, ``class``,
``subsystem_vendor``/``subsystem_device``, a ``driver`` link, an
``iommu_group`` link (one group per function), ``boot_vga`` on VGA-class
functions, ``physfn``/``virtfnN``/``sriov_numvfs``/``sriov_totalvfs`` and
``net/<netdev>/`` as the recording shows them. How PFs own VFs comes from
the recording itself: the node state's lists (ConnectX-5), the guide's
sentence (XXV710), the guide's QAT rule (a VF is the PF's id + 1 and
belongs to the PF listed before it on its bus). Variants are named
changes the recordings do not show (see :data:`VARIANTS`).
"""

import os
import pathlib
import re

REPO = pathlib.Path(__file__).resolve().parents[5]
DATA = REPO / "tests" / "data" / "drivers" / "pci"

H100 = "gpu/h100-pcie_lspci-nnk_contrast-bare-metal-doc.txt"
T4 = "gpu/tesla-t4_lspci-nnk_kubevirt-issue-14593.txt"
CONNECTX5 = ("nic/connectx5-switchdev_nodestate-lspci_"
             "kubeovn-sriov-operator-doc.txt")
XXV710 = "nic/xxv710-i40e-vfs_lspci_container-experience-kits-vm-guide.txt"
C62X = "qat/c62x-37c8-37c9_lspci-nn_container-experience-kits-vm-guide.txt"
QAT_401XX = "qat/401xx-4942-4943_qat-service-lspci_qatlib-issue-83.txt"

#: pci.ids names of listings without numbers (plain ``lspci``).
NAMES = {"Co-processor": "0b40", "Ethernet controller": "0200",
         "Intel Corporation": "8086", "Device 4942": "4942",
         "Device 4943": "4943",
         "Ethernet Controller XXV710 for 25GbE SFP28": "158b",
         "Ethernet Virtual Function 700 Series": "154c"}

_LINE = re.compile(
    r"^(?P<bdf>(?:[0-9a-f]{4}:)?[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]) "
    r"(?P<cls>[^:\[]+?)(?: \[(?P<cls_id>[0-9a-f]{4})\])?: (?P<rest>.*)$")
_IDS = re.compile(r"\[(?P<vendor>[0-9a-f]{4}):(?P<device>[0-9a-f]{4})\]")


def _bdf(text):
    return text if text.count(":") == 2 else f"0000:{text}"


def _recorded(name):
    lines = (DATA / name).read_text().splitlines()
    start = next(i for i, line in enumerate(lines)
                 if line.startswith("# ---- recorded text"))
    return lines[start + 1:]


def _by_names(cls, rest):
    """vendor, device and class of a line without numbers."""
    text = re.sub(r" \(rev [0-9a-f]+\)$", "", rest)
    vendor = next(name for name in NAMES if text.startswith(name))
    device = NAMES[text[len(vendor):].strip()]
    return NAMES[vendor], device, NAMES[cls.strip()]


def listing(name):
    """The functions of a recording's ``lspci`` lines, in listing order:
    ``{bdf: {vendor, device, class, subsystem, driver}}``."""
    functions = {}
    current = None
    for line in _recorded(name):
        match = _LINE.match(line.strip()) if not line.startswith(
            (" ", "\t")) else None
        if match:
            bdf = _bdf(match["bdf"])
            ids = _IDS.findall(match["rest"])
            if ids:
                vendor, device = ids[-1]
                cls = match["cls_id"]
            else:
                vendor, device, cls = _by_names(match["cls"], match["rest"])
            current = functions.setdefault(bdf, {
                "vendor": vendor, "device": device, "class": cls})
            continue
        text = line.strip()
        if current is not None and text.startswith("Subsystem:"):
            current["subsystem"] = _IDS.findall(text)[-1]
        elif current is not None and text.startswith("Kernel driver in use:"):
            current["driver"] = text.split(":", 1)[1].strip()
    return functions


def _connectx5_state(name):
    """PF -> its node state keys (driver, name, mac, mtu, totalvfs) and
    ``vfs``, the list of its VFs' addresses."""
    pfs, pf = {}, None
    for line in _recorded(name):
        indent = len(line) - len(line.lstrip())
        text = line.strip()
        if text.startswith("- Vfs:"):
            pf = {"vfs": []}
        elif pf is None or ":" not in text or text.startswith("- "):
            continue
        elif indent == 6 and text.startswith("pciAddress:"):
            pf["vfs"].append(text.split(":", 1)[1].strip())
        elif indent == 4:
            key, value = (part.strip() for part in text.split(":", 1))
            pf[key] = value.strip('"')
            if key == "pciAddress":
                pfs[pf[key]] = pf
    return pfs


def _connectx5(functions):
    state = _connectx5_state(CONNECTX5)
    for pf, values in state.items():
        functions[pf].update(driver=values["driver"], vfs=values["vfs"],
                             totalvfs=int(values["totalvfs"]),
                             netdevs={values["name"]: {
                                 "address": values["mac"],
                                 "mtu": values["mtu"],
                                 "compat/devlink/mode": "switchdev"}})
        for vf in values["vfs"]:
            functions[vf]["driver"] = values["driver"]
    return functions


def _xxv710(functions):
    text = "\n".join(_recorded(XXV710))
    match = re.search(r"The first (\d+) VFs belongs to PF (\S+) and the next "
                      r"(\d+) VFs belongs to PF (\S+)", text)
    vfs = [bdf for bdf, f in functions.items() if f["device"] == "154c"]
    first, second = int(match[1]), int(match[3])
    owners = [(_bdf(match[2]), vfs[:first]),
              (_bdf(match[4]), vfs[first:first + second])]
    for pf, pf_vfs in owners:
        # NOTE(tests): the guide's config names pf_driver i40e.
        functions[pf].update(driver="i40e", vfs=pf_vfs,
                             totalvfs=len(pf_vfs))
    return functions


def _qat(functions, name):
    """A VF (PF id + 1) belongs to the PF listed before it on its bus
    (the C62x paste lists the PFs once more first: read in PCI order)."""
    pf = None
    for bdf, function in sorted(functions.items()):
        device = int(function["device"], 16)
        if pf and bdf[:7] == pf[:7] and device == int(
                functions[pf]["device"], 16) + 1:
            functions[pf].setdefault("vfs", []).append(bdf)
        else:
            pf = bdf
    for bdf, function in functions.items():
        if function.get("vfs"):
            function["totalvfs"] = len(function["vfs"])
    if name == QAT_401XX:
        for line in _recorded(name):
            match = re.search(r"type: (\S+),.*bsf: (\S+),", line)
            if match:
                functions[match[2]]["driver"] = match[1]
    return functions


def _boot_vga(functions, bdf):
    functions[bdf].update({"class": "0300", "boot_vga": "1"})


def _t4_nvidia(functions, bdf):
    functions[bdf]["driver"] = "nvidia"


def _vf_up(functions, bdf, netdev):
    functions[bdf]["netdevs"] = {netdev: {"operstate": "up",
                                          "flags": "0x1003"}}


#: Changes no recording shows, made on purpose (the README of the
#: recordings names them).
VARIANTS = {
    "t4-boot-vga": (T4, lambda f: _boot_vga(f, "0000:18:00.0")),
    "t4-on-nvidia": (T4, lambda f: _t4_nvidia(f, "0000:19:00.0")),
    "connectx5-vf-up": (CONNECTX5,
                        lambda f: _vf_up(f, "0000:5f:00.3", "ens41f0v1")),
}


def functions_of(name, variants=()):
    """A recording's functions with their SR-IOV links and drivers."""
    functions = listing(name)
    if name == CONNECTX5:
        functions = _connectx5(functions)
    elif name == XXV710:
        functions = _xxv710(functions)
    elif name in (C62X, QAT_401XX):
        functions = _qat(functions, name)
    for variant in variants:
        recording, change = VARIANTS[variant]
        assert recording == name, f"{variant} is a variant of {recording}"
        change(functions)
    return functions


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{text}\n")


def _link(path, target):
    path.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(os.path.relpath(target, path.parent), path)


def write_tree(root, functions):
    """Write ``functions`` (see :func:`functions_of`) under ``root``;
    returns the root for ``[agent] sysfs_root``."""
    sys_dir = pathlib.Path(root) / "sys"
    devices = sys_dir / "bus" / "pci" / "devices"
    for group, (bdf, f) in enumerate(sorted(functions.items())):
        base = devices / bdf
        _write(base / "vendor", f"0x{f['vendor']}")
        _write(base / "device", f"0x{f['device']}")
        _write(base / "class", f"0x{f['class']}00")
        if f.get("subsystem"):
            _write(base / "subsystem_vendor", f"0x{f['subsystem'][0]}")
            _write(base / "subsystem_device", f"0x{f['subsystem'][1]}")
        if f["class"] == "0300":
            _write(base / "boot_vga", f.get("boot_vga", "0"))
        if f.get("driver"):
            driver_dir = sys_dir / "bus" / "pci" / "drivers" / f["driver"]
            driver_dir.mkdir(parents=True, exist_ok=True)
            _link(base / "driver", driver_dir)
        group_dir = sys_dir / "kernel" / "iommu_groups" / str(group)
        _link(group_dir / "devices" / bdf, base)
        _link(base / "iommu_group", group_dir)
        if "totalvfs" in f:
            _write(base / "sriov_totalvfs", f["totalvfs"])
            _write(base / "sriov_numvfs", len(f.get("vfs", [])))
        for index, vf in enumerate(f.get("vfs", [])):
            _link(base / f"virtfn{index}", devices / vf)
            _link(devices / vf / "physfn", base)
        for netdev, attrs in f.get("netdevs", {}).items():
            (base / "net" / netdev).mkdir(parents=True, exist_ok=True)
            for key, value in attrs.items():
                _write(base / "net" / netdev / key, value)
    return str(root)


def render(name, root, variants=()):
    """Write a recording (``H100``, ``CONNECTX5``, ...) as a sysfs tree."""
    return write_tree(root, functions_of(name, variants))
