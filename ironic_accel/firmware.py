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

"""The ``accel-redfish`` firmware interface: accelerator steps over Redfish.

A subclass of Ironic's RedfishFirmware, so the stock ``update`` step keeps
working for BIOS, BMC and NICs. It adds three steps, all out of band:

* ``update_accelerator_firmware`` (clean, service): firmware of devices;
* ``program_accelerator`` (deploy, clean, service): a whole-card image;
* ``refresh_accelerator_inventory`` (verify, clean, service): the inventory
  document, node traits and firmware components.

The two update steps are asynchronous. Their progress lives in
``driver_internal_info`` (:data:`STATE_KEY`): the queue of devices, the task
monitor of the running update and its last percent and messages. The
plugin's own conductor periodic polls it every
``[ironic_accel]task_poll_interval`` seconds, so a conductor that restarts
mid-update picks the polling up where it was. Whether a device needs its
update, and whether the finished update did what was asked, is decided in
:mod:`ironic_accel.update_items`.
"""

import dataclasses

from ironic.common import async_steps
from ironic.common import exception
from ironic.common import states
from ironic.conductor import periodics
from ironic.conductor import utils as manager_utils
from ironic.conf import CONF
from ironic.drivers import base
from ironic.drivers.modules.redfish import firmware as redfish_firmware
from ironic.drivers.modules.redfish import utils as redfish_utils
from oslo_log import log as logging
from oslo_utils import timeutils
import sushy

from accel_common import inventory
from ironic_accel import conf as accel_conf
from ironic_accel import discovery
from ironic_accel import exception as accel_exception
from ironic_accel import image_staging
from ironic_accel import step_settings
from ironic_accel import update_items
from ironic_accel.placement import periodic as placement_periodic
from ironic_accel.redfish import client as redfish_client
from ironic_accel.redfish import tasks as redfish_tasks
from ironic_accel.redfish import update as redfish_update

LOG = logging.getLogger(__name__)

accel_conf.register_opts(CONF)

#: driver_internal_info key of the running update (removed when it ends).
STATE_KEY = "accel_updates"
#: driver_internal_info key of the last progress of each device (kept).
PROGRESS_KEY = "accel_progress"
#: driver_internal_info key of the image last applied to each device (kept;
#: written by :func:`ironic_accel.update_items.confirm`).
APPLIED_KEY = update_items.APPLIED_KEY

_WAIT_STATES = [states.CLEANWAIT, states.DEPLOYWAIT, states.SERVICEWAIT]
#: Where a node lands when its step is aborted or times out in Ironic.
_FAIL_STATES = [states.CLEANFAIL, states.DEPLOYFAIL, states.SERVICEFAIL]


def _now():
    return timeutils.utcnow().isoformat()


def _seconds_since(stamp):
    return (timeutils.utcnow(True)
            - timeutils.parse_isotime(stamp)).total_seconds()


def resume_step(task):
    """Tell the conductor the node's running step is done, through Ironic's
    public ``notify_conductor_resume_*`` of the step's kind."""
    node = task.node
    if node.clean_step:
        manager_utils.notify_conductor_resume_clean(task)
    elif node.service_step:
        manager_utils.notify_conductor_resume_service(task)
    elif node.deploy_step:
        manager_utils.notify_conductor_resume_deploy(task)


def report_step_error(task, message):
    """Fail the node's running step with ``message`` through Ironic's
    public error handler of the step's kind.

    A node with no step left (it cannot happen while our state is set, but
    Ironic may have cleared the step) only gets the message logged.
    """
    node = task.node
    if node.clean_step:
        manager_utils.cleaning_error_handler(task, message)
    elif node.service_step:
        manager_utils.servicing_error_handler(task, message)
    elif node.deploy_step:
        manager_utils.deploying_error_handler(task, message)
    else:
        LOG.error("Node %(node)s has no running step to fail: %(msg)s",
                  {"node": node.uuid, "msg": message})


class AccelRedfishFirmware(placement_periodic.PlacementReportMixin,
                           redfish_firmware.RedfishFirmware):
    """Redfish firmware interface with accelerator steps."""

    UPDATE_ARGSINFO = {
        "settings": {
            "description": (
                "Firmware of accelerators (GPU, FPGA and other devices of "
                "the node's accelerator inventory); BIOS, BMC and NIC "
                "firmware is Ironic's own firmware.update step. "
                "A list of {accelerator, url, checksum, version?}: "
                "accelerator selects devices by id, model or type; url is "
                "the firmware image (http or https); checksum is "
                "sha256:<hex> (a bare hex digest means sha256); a device "
                "already at version is skipped; without version, a device "
                "whose last successful update used the same image and "
                "still runs the version it left is skipped."),
            "required": True,
        },
        "update_method": {
            "description": (
                "auto (default: [ironic_accel] update_method), "
                "SimpleUpdate, MultipartHttpPushUri or HttpPushUri: how "
                "the image reaches the BMC; auto picks from what the BMC's "
                "UpdateService advertises."),
            "required": False,
        },
    }

    PROGRAM_ARGSINFO = {
        "settings": {
            "description": (
                "A list of {accelerator, url, checksum, function_id?}: a "
                "whole-card image loaded on the selected devices; a device "
                "already running function_id is skipped."),
            "required": True,
        },
        "update_method": UPDATE_ARGSINFO["update_method"],
    }

    @base.verify_step(priority=10)
    @base.clean_step(priority=0, requires_ramdisk=False)
    @base.service_step(priority=0, requires_ramdisk=False)
    def refresh_accelerator_inventory(self, task):
        """Read the node's accelerators from the BMC and record them.

        Writes ``node.extra["accelerators"]``, the node traits and the
        accelerator firmware components, then reports to Placement.
        Synchronous. A BMC without accelerators gives an empty inventory.

        :raises: AcceleratorBMCError, BMCUnavailable when the BMC fails.
        """
        discovery.refresh(task)

    @base.clean_step(priority=0, abortable=True, argsinfo=UPDATE_ARGSINFO,
                     requires_ramdisk=False)
    @base.service_step(priority=0, abortable=True,
                       argsinfo=UPDATE_ARGSINFO, requires_ramdisk=False)
    def update_accelerator_firmware(self, task, settings,
                                    update_method=None):
        """Update accelerator firmware through Redfish (SimpleUpdate or a
        push update, whichever the BMC offers; see ``update_method``).

        Checks the settings and every image checksum before the BMC is
        asked anything, skips devices already at ``version``, then updates
        the devices one after another, each confirmed from
        FirmwareInventory before the next starts.

        :returns: the wait state while an update runs, None when there was
            nothing to do.
        :raises: InvalidParameterValue naming a bad argument, a checksum
            mismatch or an unknown accelerator.
        """
        return self._start(task, "update_accelerator_firmware",
                           step_settings.UPDATE_SCHEMA, settings, "firmware",
                           update_method)

    @base.deploy_step(priority=0, abortable=True, argsinfo=PROGRAM_ARGSINFO)
    @base.clean_step(priority=0, abortable=True, argsinfo=PROGRAM_ARGSINFO,
                     requires_ramdisk=False)
    @base.service_step(priority=0, abortable=True,
                       argsinfo=PROGRAM_ARGSINFO, requires_ramdisk=False)
    def program_accelerator(self, task, settings, update_method=None):
        """Load a whole-card image (e.g. an FPGA user image) on devices.

        Redfish SimpleUpdate targeted at the device, then the loaded
        function is read back from the FPGA's reconfiguration slots and
        recorded in the inventory and node traits. Idempotent: a device
        already running ``function_id`` is skipped.

        :returns: the wait state while an update runs, None when there was
            nothing to do.
        """
        return self._start(task, "program_accelerator",
                           step_settings.PROGRAM_SCHEMA, settings, "function",
                           update_method)

    def cache_firmware_components(self, task):
        """BIOS, BMC and NIC components as Ironic caches them, plus the
        accelerators of the inventory document.

        NOTE(ironic-accel): the System is read through the plugin's gateway
        rather than Ironic's redfish utils, whose session cache derives a
        600000-round PBKDF2 key on every call; Ironic caches firmware twice
        per clean, so this saves seconds of conductor CPU per clean.

        :raises: UnsupportedDriverExtension when the node reports nothing.
        """
        node = task.node
        system = redfish_client.get_system(node)
        components = []
        if system.bios_version:
            components.append({
                "component": redfish_utils.BIOS,
                "current_version": system.bios_version,
                "vendor": None, "model": None, "serial_number": None})
        try:
            manager = redfish_utils.get_manager(node, system)
            if manager.firmware_version:
                components.append({
                    "component": redfish_utils.BMC,
                    "current_version": manager.firmware_version,
                    "vendor": None, "model": manager.model,
                    "serial_number": None})
        except exception.RedfishError:
            LOG.warning("No manager available to read the BMC firmware of "
                        "node %s", node.uuid)
        try:
            components.extend(self.retrieve_nic_components(task, system)
                              or [])
        except (exception.RedfishError, sushy.exceptions.BadRequestError,
                sushy.exceptions.MissingAttributeError) as exc:
            LOG.warning("Unable to read NetworkAdapters of node %(node)s: "
                        "%(exc)s", {"node": node.uuid, "exc": exc})
        document = (node.extra or {}).get(inventory.NODE_EXTRA_KEY)
        if document:
            components.extend(discovery.firmware_components(document))
        if not components:
            raise exception.UnsupportedDriverExtension(
                f"Cannot retrieve firmware for node {node.uuid}: no "
                f"supported components")
        discovery.sync_firmware_components(task, components)

    @periodics.node_periodic(
        purpose="polling accelerator update tasks",
        spacing=lambda: CONF.ironic_accel.task_poll_interval,
        filters={"reserved": False, "provision_state_in": _WAIT_STATES},
        predicate_extra_fields=["driver_internal_info"],
        predicate=lambda n: n.driver_internal_info.get(STATE_KEY),
    )
    def _poll_accelerator_updates(self, task, manager, context):
        """Poll the running accelerator update task of a node."""
        task.upgrade_lock()
        if (task.node.provision_state not in _WAIT_STATES
                or not task.node.driver_internal_info.get(STATE_KEY)):
            return
        try:
            self._poll(task)
        except exception.IronicException as exc:
            self._fail(task, str(exc))
        except Exception as exc:
            LOG.exception("Node %s: unexpected error polling an accelerator "
                          "update", task.node.uuid)
            self._fail(task, f"unexpected error: {exc}")

    @periodics.node_periodic(
        purpose="cancelling aborted accelerator update tasks",
        spacing=lambda: CONF.ironic_accel.task_poll_interval,
        filters={"reserved": False, "provision_state_in": _FAIL_STATES},
        predicate_extra_fields=["driver_internal_info"],
        predicate=lambda n: n.driver_internal_info.get(STATE_KEY),
    )
    def _cancel_abandoned_updates(self, task, manager, context):
        """Stop following an update whose step Ironic ended.

        ``baremetal node abort`` (the steps are abortable) or Ironic's own
        wait timeout leaves the node failed with the update state behind:
        the BMC task is cancelled where the BMC allows it and the state is
        dropped, so nothing polls it any more.
        """
        task.upgrade_lock()
        node = task.node
        state = node.driver_internal_info.get(STATE_KEY)
        if node.provision_state not in _FAIL_STATES or not state:
            return
        self._abandon(task, state)

    def _abandon(self, task, state):
        node = task.node
        queue = state.get("queue") or []
        item = (queue[state.get("index", 0)]
                if state.get("index", 0) < len(queue) else None)
        note = "step aborted"
        if item is not None and item.get("monitor"):
            try:
                cancelled = redfish_tasks.cancel_task(node, item["device"],
                                                item["monitor"])
                note += (": BMC task cancelled" if cancelled else
                         ": the BMC does not allow cancelling its task, "
                         "which may still complete")
            except accel_exception.AcceleratorBMCError as exc:
                note += f": cancelling the BMC task failed: {exc}"
        if item is not None:
            self._record(node, item, item.get("percent"), "Aborted",
                         (item.get("messages") or []) + [note])
        node.del_driver_internal_info(STATE_KEY)
        image_staging.cleanup(node)
        node.save()
        LOG.warning("Node %(node)s: %(step)s ended by Ironic while its "
                    "update was running (%(note)s)",
                    {"node": node.uuid, "step": state.get("step"),
                     "note": note})

    # The step machinery below works on driver_internal_info[STATE_KEY]:
    # {"step", "kind", "index", "queue": [item, ...]}; an item is one device
    # update: {"device", "uri", "target", "url", "version", "function_id",
    # "before", "monitor", "started_at", "percent", "messages", ...}.

    def _start(self, task, step, schema, settings, kind, update_method=None):
        node = task.node
        step_settings.validate(step, schema, settings)
        forced = update_method or CONF.ironic_accel.update_method
        if forced not in ("auto",) + redfish_update.UPDATE_METHODS:
            raise exception.InvalidParameterValue(
                f"{step}: update_method {forced!r} is not one of auto, "
                f"{', '.join(redfish_update.UPDATE_METHODS)}")
        try:
            return self._start_checked(task, step, settings, kind, forced)
        except Exception:
            node.del_driver_internal_info(STATE_KEY)
            image_staging.cleanup(node)
            raise

    def _start_checked(self, task, step, settings, kind, forced):
        node = task.node
        step_settings.verify_checksums(node, settings)
        document = discovery.read_document(node)
        queue = []
        for setting in settings:
            for device in step_settings.select_devices(
                    node, document, setting["accelerator"]):
                item = update_items.plan(node, device, setting, kind)
                if item is not None and not any(
                        q["device"] == item["device"] for q in queue):
                    queue.append(item)
        if not queue:
            LOG.info("Node %(node)s: %(step)s has nothing to do, every "
                     "device is already as asked", {"node": node.uuid,
                                                   "step": step})
            image_staging.cleanup(node)
            discovery.refresh(task)
            return None
        offer = redfish_update.get_update_offer(node)
        method = redfish_update.choose_update_method(node, offer, forced)
        targets = update_items.targets(node)
        for item in queue:
            item["target"] = targets.get(item["uri"].rstrip("/"),
                                         item["uri"])
            item["method"] = method
        node.set_driver_internal_info(STATE_KEY, {
            "step": step, "kind": kind, "index": 0, "queue": queue,
            "started_at": _now(), "offer": dataclasses.asdict(offer),
            "staged": {}})
        self._start_item(task)
        node.save()
        return async_steps.get_return_state(node)

    def _start_item(self, task):
        node = task.node
        state = node.driver_internal_info[STATE_KEY]
        item = state["queue"][state["index"]]
        method = item.get("method", redfish_update.SIMPLE_UPDATE)
        offer = redfish_update.UpdateOffer(**state.get("offer") or {})
        # NOTE(ironic-accel): the BMC only ever gets the bytes that were
        # checked: the copy kept by the checksum check (or downloaded and
        # checked again), sent by the conductor or staged where the BMC
        # fetches it. The step's URL itself never reaches the BMC.
        path = image_staging.checked_copy(node, item["url"],
                                          item["checksum"])
        if method == redfish_update.SIMPLE_UPDATE:
            staged = state.setdefault("staged", {})
            if item["checksum"] not in staged:
                staged[item["checksum"]] = image_staging.stage(node, path)
            item["staged_url"] = staged[item["checksum"]]
            target = (None if offer.simple_targets is False
                      else item["target"])
            item["monitor"] = redfish_update.simple_update(
                node, item["device"], item["staged_url"], target)
        else:
            item["monitor"] = redfish_update.push_update(
                node, item["device"], method, offer, path, item["target"])
        item["started_at"] = _now()
        self._record(node, item, percent=0, task_state="Starting",
                     messages=[])
        LOG.info("Node %(node)s: accelerator %(dev)s: %(kind)s update from "
                 "%(url)s started on %(target)s with %(method)s, task "
                 "%(monitor)s",
                 {"node": node.uuid, "dev": item["device"],
                  "kind": item["kind"], "url": item["url"],
                  "target": item["target"], "method": method,
                  "monitor": item["monitor"]})
        node.set_driver_internal_info(STATE_KEY, state)

    def _record(self, node, item, percent, task_state, messages):
        progress = dict(node.driver_internal_info.get(PROGRESS_KEY) or {})
        progress[item["device"]] = {
            "kind": item["kind"], "url": item["url"],
            "state": task_state, "percent": percent,
            "messages": messages[-5:], "updated_at": _now()}
        node.set_driver_internal_info(PROGRESS_KEY, progress)

    def _poll(self, task):
        node = task.node
        state = node.driver_internal_info[STATE_KEY]
        item = state["queue"][state["index"]]
        device = item["device"]
        if _seconds_since(item["started_at"]) > CONF.ironic_accel.task_timeout:
            raise accel_exception.AcceleratorBMCError(
                node=node.uuid, device=device,
                reason=f"update task {item['monitor']} did not finish within "
                       f"{CONF.ironic_accel.task_timeout} seconds")
        try:
            status = redfish_tasks.poll_task(node, device, item["monitor"])
        except accel_exception.BMCUnavailable as exc:
            since = item.setdefault("unreachable_since", _now())
            limit = CONF.ironic_accel.bmc_unavailable_timeout
            if _seconds_since(since) > limit:
                raise accel_exception.BMCUnavailable(
                    node=node.uuid, device=device,
                    reason=f"no answer for more than {limit} seconds while "
                           f"polling task {item['monitor']}: {exc}")
            LOG.warning("Node %(node)s: BMC unavailable polling %(dev)s, "
                        "retrying on the next poll: %(exc)s",
                        {"node": node.uuid, "dev": device, "exc": exc})
            node.set_driver_internal_info(STATE_KEY, state)
            node.save()
            return
        item.pop("unreachable_since", None)
        if (status.percent, status.messages) != (item.get("percent"),
                                                 item.get("messages")):
            LOG.info("Node %(node)s: accelerator %(dev)s update %(state)s "
                     "%(pct)s%%: %(msgs)s",
                     {"node": node.uuid, "dev": device, "state": status.state,
                      "pct": status.percent, "msgs": "; ".join(
                          status.messages) or "-"})
        item["percent"], item["messages"] = status.percent, status.messages
        self._record(node, item, status.percent, status.state,
                     status.messages)
        node.set_driver_internal_info(STATE_KEY, state)
        if status.running:
            node.save()
            node.touch_provisioning()
            return
        if not status.succeeded:
            raise accel_exception.AcceleratorBMCError(
                node=node.uuid, device=device,
                reason=f"update task with image {item['url']} ended in "
                       f"state {status.state}, status {status.health}: "
                       f"{'; '.join(status.messages[-2:]) or 'no message'}")
        update_items.confirm(node, item)
        self._record(node, item, 100, "Confirmed", status.messages)
        state["index"] += 1
        if state["index"] < len(state["queue"]):
            node.set_driver_internal_info(STATE_KEY, state)
            self._start_item(task)
            node.save()
            return
        self._finish(task)

    def _finish(self, task):
        node = task.node
        state = node.driver_internal_info[STATE_KEY]
        LOG.info("Node %(node)s: %(step)s finished for %(devs)s",
                 {"node": node.uuid, "step": state["step"],
                  "devs": ", ".join(i["device"] for i in state["queue"])})
        node.del_driver_internal_info(STATE_KEY)
        image_staging.cleanup(node)
        node.save()
        discovery.refresh(task)
        resume_step(task)

    def _fail(self, task, message):
        node = task.node
        state = node.driver_internal_info.get(STATE_KEY) or {}
        queue = state.get("queue") or []
        if queue and state.get("index", 0) < len(queue):
            item = queue[state["index"]]
            self._record(node, item, item.get("percent"), "Failed",
                         (item.get("messages") or []) + [message])
        node.del_driver_internal_info(STATE_KEY)
        image_staging.cleanup(node)
        node.save()
        LOG.error("Node %(node)s: %(step)s failed: %(msg)s",
                  {"node": node.uuid, "step": state.get("step"),
                   "msg": message})
        report_step_error(
            task, f"{state.get('step', 'accelerator step')} failed on node "
                  f"{node.uuid}: {message}")
