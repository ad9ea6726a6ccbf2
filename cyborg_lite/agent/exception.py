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

"""Errors of the host agent, raised on the agent and re-raised on the caller.

oslo.messaging rebuilds an exception of this module on the calling side (the
module is in the transport's ``allowed_remote_exmods``) from its ``args`` and
``kwargs``, so every class takes ``(message=None, **kwargs)`` and keeps
JSON-able kwargs. ``code`` is stable; ``message`` is what a user reads, e.g.
as the reason of a ``BindFailed`` ARQ.
"""


class AgentError(Exception):
    """Base class; ``msg_fmt`` is filled from the keyword arguments."""

    msg_fmt = "The accelerator agent failed: %(reason)s"
    code = "agent.error"

    def __init__(self, message=None, **kwargs):
        self.kwargs = kwargs
        if not message:
            try:
                message = self.msg_fmt % kwargs
            except (KeyError, TypeError, ValueError):
                message = f"{self.msg_fmt} {kwargs}"
        self.message = message
        super().__init__(message)

    def __str__(self):
        return self.message


class InvalidRequest(AgentError):
    msg_fmt = "Invalid request to the agent: %(reason)s"
    code = "agent.invalid_request"


class DriverNotFound(AgentError):
    msg_fmt = ("Accelerator driver %(driver)r is not installed (entry "
               "points of cyborg_lite.drivers: %(available)s)")
    code = "agent.driver_not_found"


class DeviceNotFound(AgentError):
    msg_fmt = "No accelerator at PCI address %(pci_address)s on %(host)s"
    code = "agent.device_not_found"


class RegionNotFound(AgentError):
    msg_fmt = "Device %(pci_address)s has no region %(region_id)r"
    code = "agent.region_not_found"


class RegionBusy(AgentError):
    msg_fmt = ("Region %(region_id)s of device %(pci_address)s is being "
               "programmed already")
    code = "agent.region_busy"


class NotSupported(AgentError):
    msg_fmt = "Driver %(driver)s cannot %(operation)s"
    code = "agent.not_supported"


class ToolNotFound(AgentError):
    msg_fmt = ("Vendor tool %(tool)s is not installed or not executable: "
               "%(reason)s")
    code = "agent.tool_not_found"


class ToolFailed(AgentError):
    msg_fmt = "%(tool)s failed with exit code %(exit_code)s: %(stderr)s"
    code = "agent.tool_failed"


class SysfsError(AgentError):
    msg_fmt = "Cannot use %(path)s: %(reason)s"
    code = "agent.sysfs"


class HelperNotStarted(AgentError):
    msg_fmt = ("The agent's privileged helper did not start (%(command)s, "
               "[cyborg_lite_agent_privileged] helper_command): %(reason)s; "
               "nothing was done")
    code = "agent.helper_not_started"


class ProgrammingFailed(AgentError):
    msg_fmt = ("Programming region %(region_id)s of device %(pci_address)s "
               "failed: %(reason)s")
    code = "agent.programming_failed"


class ImageNotFound(AgentError):
    msg_fmt = "Image not found: %(reason)s"
    code = "agent.image_not_found"


class ImageAmbiguous(AgentError):
    msg_fmt = ("%(count)s images carry accel:function_id %(function_id)s "
               "(%(ids)s); exactly one must")
    code = "agent.image_ambiguous"


class ImageDownloadFailed(AgentError):
    msg_fmt = "Downloading image %(image_id)s failed: %(reason)s"
    code = "agent.image_download_failed"


class ChecksumMismatch(AgentError):
    msg_fmt = ("Image %(image_id)s has %(algorithm)s %(actual)s, expected "
               "%(expected)s; nothing was programmed")
    code = "agent.checksum_mismatch"


class UnsupportedDevice(AgentError):
    msg_fmt = "Driver %(driver)s cannot serve %(what)s: %(reason)s"
    code = "agent.unsupported_device"


class UnknownToolOutput(AgentError):
    msg_fmt = ("Driver %(driver)s does not understand the output of "
               "%(tool)s (%(version)s): %(reason)s")
    code = "agent.unknown_tool_output"


class MdevError(AgentError):
    msg_fmt = ("Mediated device %(mdev_uuid)s on %(pci_address)s: "
               "%(reason)s")
    code = "agent.mdev"


# NOTE(agent): the two below are raised on the calling side only: they say
# the agent could not be asked, not that it answered with an error.
class AgentTimeout(AgentError):
    msg_fmt = ("The agent on host %(host)s did not answer %(method)s "
               "%(waited)s: the agent is down or died while working")
    code = "agent.timeout"


class AgentUnreachable(AgentError):
    msg_fmt = ("Cannot reach the agent on host %(host)s for %(method)s: "
               "message broker unreachable after %(attempts)s attempts "
               "(%(reason)s)")
    code = "agent.unreachable"
