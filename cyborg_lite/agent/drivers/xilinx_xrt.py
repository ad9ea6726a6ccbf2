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
stands for the shell (``--base --image``), a whole-card update normally left
to Ironic.
"""

import os
import re

from cyborg_lite.agent import exception
from cyborg_lite.agent.drivers import _host
from cyborg_lite.agent.drivers import base

USER_REGION = "0"
BASE_REGION = "base"

_DEVICE_LINE = re.compile(
    r"^\s*\[(?P<bdf>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\]"
    r"\s*:\s*(?P<shell>\S+)")


def parse_examine(output):
    """``xbmgmt examine`` text -> list of ``(bdf, shell)``."""
    devices = []
    for line in output.splitlines():
        match = _DEVICE_LINE.match(line)
        if match:
            devices.append((match.group("bdf").lower(),
                            match.group("shell")))
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
        return dict(parse_examine(self._xbmgmt(["examine"])))

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
        """``xbmgmt program --device <bdf> --user <xclbin>`` (or --base)."""
        self._check(region)
        if region.region_id == BASE_REGION:
            args = ["program", "--device", region.pci_address, "--base",
                    "--image", image_path]
        else:
            args = ["program", "--device", region.pci_address, "--user",
                    image_path]
        self._xbmgmt(args)

    def reset(self, region):
        """``xbmgmt reset --device <bdf> --force`` (hot reset of the card)."""
        self._check(region)
        self._xbmgmt(["reset", "--device", region.pci_address, "--force"])
