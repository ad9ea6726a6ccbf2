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

"""ironic_accel's exceptions.

The errors of the steps are Ironic's own (:class:`AcceleratorBMCError` is
a ``RedfishError``, so Ironic reports it as it reports its Redfish
errors); the reporter's and the migration's derive from
:class:`IronicAccelError`.
"""

from ironic.common import exception
from ironic.common.i18n import _


class IronicAccelError(Exception):
    """Base of the reporter's and the migration's errors."""


class AcceleratorBMCError(exception.RedfishError):
    """A BMC request for an accelerator failed."""
    _msg_fmt = _("BMC of node %(node)s, device %(device)s: %(reason)s")


class BMCUnavailable(AcceleratorBMCError):
    """The BMC did not answer (connection error or 503) within the retries."""
    _msg_fmt = _("BMC of node %(node)s unavailable (device %(device)s): "
                 "%(reason)s")


class ParentNotFound(IronicAccelError):
    """The compute-node provider of the document's host is not in Placement.

    Nova creates it when nova-compute first starts on the host; until then
    the report cannot be made, and the periodic retries it.
    """

    def __init__(self, host, source=None):
        self.host = host
        self.source = source
        origin = f" from compute_host_source = {source}" if source else ""
        super().__init__(
            f"no compute-node resource provider named {host!r} in "
            f"Placement (name tried: {host!r}{origin}); either "
            "nova-compute has not registered the host yet (the next "
            "periodic report retries) or Nova knows it by another name: "
            "set [ironic_accel] compute_host_source to 'name', "
            "'extra:<key>', 'instance_info:<key>' or a template such as "
            "'{name}.example.org' so it gives nova-compute's hypervisor "
            "hostname")


class ReportError(IronicAccelError):
    """A provider could not be brought to the desired state."""


class FlatHost(ReportError):
    """The compute node still carries the accelerator inventory itself."""

    def __init__(self, host, classes):
        super().__init__(
            f"the compute node {host!r} still has accelerator inventory "
            f"({', '.join(sorted(classes))}) from the legacy flat model; "
            "reporting nested providers now would count the devices twice. "
            f"Run 'ironic-accel-manage placement migrate-flat --host {host}' "
            "first")


class MigrationRefused(IronicAccelError):
    """The flat inventory cannot be matched to the nested devices."""
