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

"""The conductor periodic that keeps Placement in step with the documents.

:class:`PlacementReportMixin` adds a node periodic to a hardware interface
(the accel-redfish firmware interface mixes it in): every
``[accel_placement] report_interval`` seconds each conductor re-reports the
documents of the nodes its hash ring maps to it, so a fleet reports in
parallel and a missed report (Placement down, compute node not registered
yet) is retried. A node whose document has not changed since this
process reported it is skipped without any Placement request, except every
``[accel_placement] full_report_every`` passes, when it is reported in full
(two reads per node when nothing changed, thanks to the client's provider
snapshots), which repairs drift made in Placement behind its back.
"""

from ironic.conductor import periodics
from ironic.conf import CONF
from oslo_log import log as logging

from accel_common import inventory
from ironic_accel import conf as accel_conf
from ironic_accel.placement import reporter

LOG = logging.getLogger(__name__)

accel_conf.register_opts(CONF)


def _enabled():
    return (CONF.accel_placement.enabled
            and CONF.accel_placement.report_interval > 0)


def _has_document(node):
    return bool((node.extra or {}).get(inventory.NODE_EXTRA_KEY))


class PlacementReportMixin:
    """Mix into a hardware interface to re-report nodes periodically."""

    @periodics.node_periodic(
        purpose="reporting accelerators to Placement",
        spacing=lambda: CONF.accel_placement.report_interval,
        enabled=_enabled,
        predicate_extra_fields=["extra"],
        predicate=_has_document,
    )
    def _report_accelerators_to_placement(self, task, manager, context):
        """Re-report one node's stored inventory document."""
        node = task.node
        document = (node.extra or {}).get(inventory.NODE_EXTRA_KEY)
        if not document:
            return False
        try:
            reporter.report_periodic(node, document, conf=CONF)
        except Exception as exc:
            LOG.warning("Node %s: periodic accelerator report to Placement "
                        "failed, retrying in %s s: %s", node.uuid,
                        CONF.accel_placement.report_interval, exc)
