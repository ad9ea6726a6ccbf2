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

"""``xilinx_xrt``: Xilinx Alveo cards through XRT's ``xbmgmt``.

``xbmgmt examine`` lists the cards by their management PF (function 0); the
user PF (same slot, function 1) is the attach handle given to a guest. The
card runs one user image at a time (``program_mode`` ``single``), region
``0``; ``xbmgmt program --device <bdf> --user <xclbin>`` loads it and the
xocl driver shows its UUID in the user PF's ``xclbinuuid``. Region ``base``
stands for the shell (``--base --image <installed partition name>``), a
whole-card update normally left to Ironic.

``xbmgmt examine`` prints its devices in two formats: up to XRT 2.12
``[bdf] : <shell> mgmt(inst=N)``, from 2.13 a table ``BDF : Shell Platform
UUID Device ID [Device Ready*]`` (from 2.14 with ``Logic UUID`` and a dashed
rule). A card in its golden image or otherwise not
ready (``NOTE: Device not ready for use``, ``n/a n/a``, ``Device Ready No``)
has no user PF: it is logged and not offered. A device line neither format
explains is an error naming the tool and XRT version, never a guessed card.
"""

import os
import re

from oslo_log import log as logging

from cyborg_lite.agent import exception
from cyborg_lite.agent.drivers import _host
from cyborg_lite.agent.drivers import base
from cyborg_lite.agent.privsep import checks
from cyborg_lite.agent.privsep import fpga as privsep_fpga

USER_REGION = "0"
BASE_REGION = "base"

LOG = logging.getLogger(__name__)

_DEVICE_LINE = re.compile(
    r"^\s*\[(?P<bdf>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\]"
    r"\s*:\s*(?P<rest>.*)$")
_VERSION = re.compile(r"^\s*Version\s*:\s*(?P<version>\d+\.\d+\S*)\s*$")
_NOT_READY = ("NOTE: Device not ready", "n/a")


def xrt_version(output):
    """The XRT version ``xbmgmt examine`` reports (its ``XRT`` section)."""
    in_xrt = False
    for line in output.splitlines():
        if line.strip() == "XRT":
            in_xrt = True
        elif in_xrt:
            match = _VERSION.match(line)
            if match:
                return match.group("version")
    return "unknown XRT version"


def parse_examine(output):
    """``xbmgmt examine`` text -> list of ``(bdf, shell, ready)``, read from
    its ``Devices present`` section (which a blank line ends; the per-device
    reports of ``-r all`` after it are not devices).

    :raises UnknownToolOutput: for a line of that section no known format
        explains.
    """
    devices = []
    in_devices = False
    for line in output.splitlines():
        stripped = line.strip()
        if stripped == "Devices present":
            in_devices = True
            continue
        if not in_devices:
            continue
        if not stripped:
            in_devices = False
            continue
        if set(stripped) == {"-"} or stripped.startswith(
                ("BDF", "0 devices found", "*")):
            continue
        match = _DEVICE_LINE.match(line)
        words = match.group("rest").split() if match else []
        if not words:
            raise exception.UnknownToolOutput(
                driver="xilinx_xrt", tool="xbmgmt examine",
                version=xrt_version(output),
                reason=f"unexpected line {stripped!r} among the devices")
        rest = match.group("rest")
        ready = not (any(mark in rest for mark in _NOT_READY)
                     or words[-1] == "No")
        devices.append((match.group("bdf").lower(), words[0], ready))
    return devices


def user_pf(mgmt_bdf):
    """The user PF of a management PF: same slot, function 1."""
    return mgmt_bdf[:-1] + "1"


class XilinxXrtDriver(base.AcceleratorDriver):
    """Xilinx Alveo: ``xbmgmt examine`` discovery, ``xbmgmt program``."""

    name = "xilinx_xrt"

    def __init__(self, conf):
        super().__init__(conf)
        self.sysfs = _host.Sysfs(conf.agent.sysfs_root)

    def _xbmgmt(self, args):
        return _host.run_tool(self.conf.agent.xbmgmt_path, args,
                              self.conf.agent.tool_timeout)

    def _cards(self):
        """mgmt PF BDF -> shell, of the cards ready for use."""
        cards = {}
        for bdf, shell, ready in parse_examine(self._xbmgmt(["examine"])):
            if ready:
                cards[bdf] = shell
            else:
                LOG.warning("xilinx_xrt: card %s (%s) is not ready for use "
                            "(golden image, or no shell loaded); not "
                            "offered until its shell is flashed", bdf,
                            shell)
        return cards

    def discover(self):
        """Alveo cards with their user PF as the attach handle."""
        devices = []
        for bdf, shell in sorted(self._cards().items()):
            vendor_id, product_id = self.sysfs.pci_ids(bdf)
            devices.append({
                "type": "FPGA", "vendor": "Xilinx", "vendor_id": vendor_id,
                "product_id": product_id, "pci_address": bdf,
                "model": shell, "program_mode": "single",
                "regions": [{
                    "id": USER_REGION,
                    "function_id": self._xclbin_uuid(bdf),
                    "state": base.READY,
                    "attach_handles": [{"type": "PCI",
                                        "pci_address": user_pf(bdf)}],
                }],
            })
        return devices

    def _xclbin_uuid(self, bdf):
        value = self.sysfs.read(
            os.path.join(self.sysfs.pci_device(user_pf(bdf)), "xclbinuuid"))
        # NOTE(agent): xocl shows an all-zero UUID when no xclbin is loaded.
        if not value or set(value.replace("-", "")) == {"0"}:
            return None
        return value.lower()

    def _check(self, region):
        if region.region_id not in (USER_REGION, BASE_REGION):
            raise exception.RegionNotFound(pci_address=region.pci_address,
                                           region_id=region.region_id)
        if region.pci_address.lower() not in self._cards():
            raise exception.RegionNotFound(pci_address=region.pci_address,
                                           region_id=region.region_id)

    def current_function(self, region):
        """The loaded xclbin's UUID (user region)."""
        self._check(region)
        if region.region_id == BASE_REGION:
            raise exception.NotSupported(
                driver=self.name, operation="read the shell as a function")
        return base.reading(self._xclbin_uuid(region.pci_address.lower()))

    def program(self, region, image_path, function_id):
        """``xbmgmt program --device <bdf> --user <xclbin>``, or for the
        base region ``--base --image <partition>``: ``--image`` names an
        installed shell partition (``function_id``), not a file. Both run
        in the privsep daemon (:mod:`cyborg_lite.agent.privsep.fpga`)."""
        self._check(region)
        xbmgmt = self.conf.agent.xbmgmt_path
        timeout = self.conf.agent.tool_timeout
        bdf = _host.check("xbmgmt program", checks.pci_address,
                          region.pci_address)
        if region.region_id == BASE_REGION:
            if not function_id:
                raise exception.InvalidRequest(
                    reason="programming the base region needs the name of "
                           "an installed shell partition as its function "
                           "(xbmgmt program --base --image takes a name, "
                           "not a file)")
            partition = _host.check("xbmgmt program", checks.name,
                                    function_id, "shell partition name")
            _host.privileged(
                f"{xbmgmt} program --device {bdf} --base --image "
                f"{partition}", privsep_fpga.xbmgmt_program_base, xbmgmt,
                bdf, partition, timeout)
            return
        image_dirs = _host.image_dirs(self.conf)
        image = _host.check("xbmgmt program", checks.image_path, image_path,
                            image_dirs)
        _host.privileged(
            f"{xbmgmt} program --device {bdf} --user {image}",
            privsep_fpga.xbmgmt_program_user, xbmgmt, bdf, image,
            image_dirs, timeout)

    def reset(self, region):
        """``xbmgmt reset --device <bdf> --force`` (hot reset of the card),
        in the privsep daemon."""
        self._check(region)
        bdf = _host.check("xbmgmt reset", checks.pci_address,
                          region.pci_address)
        xbmgmt = self.conf.agent.xbmgmt_path
        _host.privileged(f"{xbmgmt} reset --device {bdf} --force",
                         privsep_fpga.xbmgmt_reset, xbmgmt, bdf,
                         self.conf.agent.tool_timeout)
