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

"""The vendor tools that program and reset FPGA cards, one device each.

Each function runs one fixed command shape; the caller gives the device,
the image and the tool's configured path, never free arguments. Results
come back as ``(exit code, stdout, stderr)``, exit code None on a timeout,
for the agent to turn into its own errors.
"""

import subprocess

from cyborg_lite.agent import privsep
from cyborg_lite.agent.privsep import checks


def _run(command, timeout):
    try:
        result = subprocess.run(command, capture_output=True, text=True,
                                timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return None, "", f"still running after {timeout} s, killed"
    return result.returncode, result.stdout, result.stderr


@privsep.sys_admin_pctxt.entrypoint
def fpgaconf(tool, pci_address, image_path, image_dirs, timeout):
    """``fpgaconf [--segment S] --bus B --device D --function F <image>``.

    :raises ValueError: for a bad address, tool or image path.
    """
    bdf = checks.split_pci_address(pci_address)
    image = checks.image_path(image_path, image_dirs)
    command = [checks.tool(tool, "fpgaconf")]
    # NOTE(agent): fpgaconf before OPAE 1.4 has no --segment; only
    # multi-segment hosts need it.
    if int(bdf["domain"], 16):
        command += ["--segment", f"0x{bdf['domain']}"]
    command += ["--bus", f"0x{bdf['bus']}", "--device", f"0x{bdf['slot']}",
                "--function", f"0x{bdf['function']}", image]
    return _run(command, timeout)


@privsep.sys_admin_pctxt.entrypoint
def xbmgmt_program_user(tool, pci_address, image_path, image_dirs, timeout):
    """``xbmgmt program --device <bdf> --user <xclbin>``."""
    command = [checks.tool(tool, "xbmgmt"), "program", "--device",
               checks.pci_address(pci_address), "--user",
               checks.image_path(image_path, image_dirs)]
    return _run(command, timeout)


@privsep.sys_admin_pctxt.entrypoint
def xbmgmt_program_base(tool, pci_address, partition, timeout):
    """``xbmgmt program --device <bdf> --base --image <partition>``: the
    name of an installed shell partition, not a file."""
    command = [checks.tool(tool, "xbmgmt"), "program", "--device",
               checks.pci_address(pci_address), "--base", "--image",
               checks.name(partition, "shell partition name")]
    return _run(command, timeout)


@privsep.sys_admin_pctxt.entrypoint
def xbmgmt_reset(tool, pci_address, timeout):
    """``xbmgmt reset --device <bdf> --force``."""
    command = [checks.tool(tool, "xbmgmt"), "reset", "--device",
               checks.pci_address(pci_address), "--force"]
    return _run(command, timeout)
