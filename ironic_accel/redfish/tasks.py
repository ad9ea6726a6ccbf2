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

"""Following a BMC task: one poll of its task monitor, and cancelling it."""

import dataclasses

from oslo_log import log as logging
import sushy

from ironic_accel.redfish import client as bmc

LOG = logging.getLogger(__name__)

#: Task states in which a BMC task is still working.
RUNNING_TASK_STATES = frozenset({
    sushy.TASK_STATE_NEW, sushy.TASK_STATE_STARTING, sushy.TASK_STATE_RUNNING,
    sushy.TASK_STATE_PENDING, sushy.TASK_STATE_SUSPENDED,
    sushy.TASK_STATE_SERVICE, sushy.TASK_STATE_INTERRUPTED,
})

@dataclasses.dataclass
class TaskStatus:
    """What one poll of a BMC task monitor found."""

    running: bool
    state: str | None = None
    health: str | None = None
    percent: int | None = None
    messages: list = dataclasses.field(default_factory=list)
    retry_after: float = 1.0

    @property
    def succeeded(self):
        """Finished with TaskState Completed and a healthy TaskStatus."""
        return (not self.running and self.state == "Completed"
                and self.health in (None, "OK", "Warning"))


def _retry_after(monitor):
    # NOTE(ironic-accel): sushy's TaskMonitor.sleep_for gives the header
    # as a string when it holds digits, seconds when it holds a date.
    try:
        return max(0.0, float(monitor.sleep_for))
    except (TypeError, ValueError, OverflowError):
        return 1.0


def poll_task(node, device, monitor_uri):
    """Poll a task monitor once.

    :returns: :class:`TaskStatus`.
    :raises: BMCUnavailable when the BMC does not answer; AcceleratorBMCError
        when the task is gone or the BMC errs.
    """
    def read(client):
        monitor = client.root.get_task_monitor(monitor_uri)
        task = monitor.task
        if task is None and not monitor.is_processing:
            # NOTE(ironic-accel): a finished monitor may answer with the
            # Task body or redirect to it; read it explicitly.
            task = monitor.get_task()
        status = TaskStatus(running=monitor.is_processing,
                            retry_after=_retry_after(monitor))
        if task is None:
            return status
        if task.task_state is not None:
            status.state = task.task_state.value
            # NOTE(ironic-accel): a task URI answers 202 while running, so
            # the state inside counts more than the status code.
            status.running = task.task_state in RUNNING_TASK_STATES
        if task.task_status is not None:
            status.health = task.task_status.value
        status.percent = task.percent_complete
        status.messages = [m.message or m.message_id
                           for m in (task.messages or [])
                           if m.message or m.message_id]
        return status
    return bmc.call(node, device, f"GET task {monitor_uri}", read)


def cancel_task(node, device, monitor_uri):
    """Ask the BMC to cancel a task (DSP0266: DELETE on its monitor).

    :returns: True when the BMC accepted the cancel, False when it refused
        it (many BMCs do not allow cancelling an update).
    :raises: BMCUnavailable when the BMC does not answer.
    """
    def delete(client):
        try:
            client.connector.delete(monitor_uri)
        except sushy.exceptions.HTTPError as exc:
            if exc.status_code in (400, 403, 404, 405, 409, 501):
                LOG.info("Node %(node)s: the BMC refused to cancel task "
                         "%(uri)s: %(exc)s", {"node": node.uuid,
                                             "uri": monitor_uri, "exc": exc})
                return False
            raise
        return True
    return bmc.call(node, device, f"DELETE task {monitor_uri}", delete,
                 idempotent=False)

