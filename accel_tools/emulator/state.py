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


"""The emulator's state: systems, devices, faults, tasks, sessions.

Everything lives in one JSON document, written atomically to the state file
after every change, so a restarted emulator carries on where it stopped. A
task keeps its start time: after a restart it completes on schedule, as if
nothing happened. Tasks advance lazily (:meth:`State.advance` runs before
every request), which is what makes them restart-safe: no thread owns them.

One lock serialises all access; requests come from a threaded server.
"""

import copy
import datetime
import json
import os
import re
import secrets
import tempfile
import threading
import time
import uuid

from accel_tools.emulator import devices
from accel_tools.emulator import exception
from accel_tools.emulator import images

STATE_FORMAT = 1
DEFAULT_TASK_SECONDS = 2.0
#: Fixed namespace for the uuids the emulator derives (systems, slots).
UUID_NAMESPACE = uuid.UUID("0d3f4a52-9a51-5c1e-8a43-bb1e3a0c7e11")

#: Progress lines are added to a running task's Messages at these percents.
PROGRESS_MILESTONES = (25, 50, 75)
MAX_RECORDED_REQUESTS = 1000

FAULT_DEFAULTS = {
    "task_exception": False,
    "version_unchanged": False,
    "unavailable_until": 0.0,
    "task_seconds": DEFAULT_TASK_SECONDS,
}


def new_system(system_id):
    """A fresh system record with the default devices."""
    return {
        "uuid": str(uuid.uuid5(UUID_NAMESPACE, "system/%s" % system_id)),
        "power_state": "On",
        "boot": {"target": "None", "enabled": "Disabled", "mode": "UEFI"},
        "bios_version": "U46 v2.10 (05/17/2024)",
        "devices": devices.normalize_devices(devices.default_devices(), system_id),
    }


def slot_uuid(system_id, device_id, slot_id):
    """The stable UUID of an FPGA reconfiguration slot."""
    return str(uuid.uuid5(UUID_NAMESPACE, "slot/%s/%s/%s" % (system_id, device_id, slot_id)))


def isotime(epoch):
    """Redfish date-time for a POSIX timestamp (UTC)."""
    if epoch is None:
        return None
    return datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%S+00:00")


class State:
    """The emulator state, persisted in ``path`` (JSON).

    :param path: the state file. Loaded if it exists; created otherwise.
    :param systems: systems "1".."systems" exist (others in the file are kept).
    :param clock: returns POSIX time; tests may pass their own.
    :raises: ValueError if the state file is unreadable or invalid.
    """

    def __init__(self, path, systems=1, clock=time.time):
        self.path = os.fspath(path)
        self.clock = clock
        self._lock = threading.RLock()
        self.data = self._load()
        for n in range(1, int(systems) + 1):
            self.data["systems"].setdefault(str(n), None)
        for sid, system in list(self.data["systems"].items()):
            base = new_system(sid)
            if system:
                base.update(system)
                base["devices"] = devices.normalize_devices(base["devices"], sid)
            self.data["systems"][sid] = base
        self.save()

    def _load(self):
        data = {}
        if os.path.exists(self.path) and os.path.getsize(self.path):
            try:
                with open(self.path) as f:
                    data = json.load(f)
            except ValueError as exc:
                raise ValueError("state file %s is not valid JSON: %s" % (self.path, exc))
            if not isinstance(data, dict):
                raise ValueError("state file %s must hold a JSON object" % self.path)
        data.setdefault("format", STATE_FORMAT)
        data.setdefault("systems", {})
        data.setdefault("manager", {"firmware_version": "1.45.455"})
        data["faults"] = dict(FAULT_DEFAULTS, **data.get("faults", {}))
        data.setdefault("tasks", {})
        data.setdefault("next_task_id", 1)
        data.setdefault("sessions", {})
        data.setdefault("requests", [])
        if not isinstance(data["systems"], dict):
            raise ValueError("state file %s: systems must be an object" % self.path)
        return data

    def save(self):
        """Write the state file atomically (write a temporary file, rename)."""
        with self._lock:
            directory = os.path.dirname(os.path.abspath(self.path))
            fd, tmp = tempfile.mkstemp(prefix=".emulator-state-", dir=directory)
            try:
                with os.fdopen(fd, "w") as f:
                    json.dump(self.data, f, indent=1, sort_keys=True)
                os.replace(tmp, self.path)
            except BaseException:
                if os.path.exists(tmp):
                    os.unlink(tmp)
                raise

    def snapshot(self, include_requests=False):
        """A deep copy of the state, tasks advanced to now.

        :param include_requests: also copy the (long) request log.
        """
        with self._lock:
            self.advance()
            data = {k: v for k, v in self.data.items()
                    if include_requests or k != "requests"}
            return copy.deepcopy(data)

    # Systems and devices

    def system(self, system_id):
        """The record of one system; raises NotFound."""
        try:
            return self.data["systems"][system_id]
        except KeyError:
            raise exception.NotFound("System %s" % system_id)

    def device(self, system_id, device_id):
        """One device of a system; raises NotFound."""
        for dev in self.system(system_id)["devices"]:
            if dev["id"] == device_id:
                return dev
        raise exception.NotFound("Processor %s of system %s" % (device_id, system_id))

    def nic(self, system_id, device_id):
        """One NIC (network adapter) of a system; raises NotFound."""
        dev = self.device(system_id, device_id)
        if not devices.is_nic(dev):
            raise exception.NotFound("NetworkAdapter %s of system %s" % (device_id, system_id))
        return dev

    def set_devices(self, system_id, specs):
        """Replace the device inventory of a system (creating the system)."""
        normalized = devices.normalize_devices(specs, system_id)
        with self._lock:
            system = self.data["systems"].setdefault(system_id, new_system(system_id))
            system["devices"] = normalized
            self.save()

    def reset_system(self, system_id, reset_type):
        """Apply a ComputerSystem.Reset action."""
        with self._lock:
            system = self.system(system_id)
            on = system["power_state"] == "On"
            if reset_type in ("On", "ForceOn", "ForceRestart", "GracefulRestart",
                              "PowerCycle"):
                on = True
            elif reset_type in ("ForceOff", "GracefulShutdown"):
                on = False
            elif reset_type == "PushPowerButton":
                on = not on
            elif reset_type != "Nmi":
                raise exception.BadRequest("ResetType %r is not supported" % reset_type,
                                 "ActionParameterValueNotInList",
                                 [str(reset_type), "ResetType", "ComputerSystem.Reset"])
            system["power_state"] = "On" if on else "Off"
            self.save()

    def set_boot(self, system_id, target=None, enabled=None, mode=None):
        """Change the boot source override of a system."""
        with self._lock:
            boot = self.system(system_id)["boot"]
            for key, value in (("target", target), ("enabled", enabled), ("mode", mode)):
                if value is not None:
                    boot[key] = value
            self.save()

    # Faults and requests

    def set_faults(self, body):
        """Apply a fault document (see README.rst); returns the faults."""
        if not isinstance(body, dict):
            raise exception.BadRequest("the fault document must be a JSON object")
        known = ("task_exception", "version_unchanged", "unavailable_seconds", "task_seconds")
        unknown = sorted(set(body) - set(known))
        if unknown:
            raise exception.BadRequest("unknown fault(s) %s; known: %s"
                             % (", ".join(unknown), ", ".join(known)))
        for key in ("task_exception", "version_unchanged"):
            if key in body and not isinstance(body[key], bool):
                raise exception.BadRequest("%s must be true or false" % key)
        for key in ("unavailable_seconds", "task_seconds"):
            if key in body and (isinstance(body[key], bool)
                                or not isinstance(body[key], (int, float))
                                or body[key] < 0):
                raise exception.BadRequest("%s must be a number >= 0" % key)
        with self._lock:
            faults = self.data["faults"]
            for key in ("task_exception", "version_unchanged"):
                if key in body:
                    faults[key] = body[key]
            if "task_seconds" in body:
                faults["task_seconds"] = float(body["task_seconds"])
            if "unavailable_seconds" in body:
                faults["unavailable_until"] = self.clock() + float(body["unavailable_seconds"])
            self.save()
            return self.faults()

    def faults(self):
        """The current faults, with ``unavailable_seconds`` left."""
        with self._lock:
            faults = dict(self.data["faults"])
        faults["unavailable_seconds"] = self.unavailable_for()
        return faults

    def unavailable_for(self):
        """Seconds during which /redfish still answers 503 (0 if available)."""
        return max(0.0, self.data["faults"]["unavailable_until"] - self.clock())

    def record_request(self, method, path, body, status):
        """Remember a modifying request (the emulator's request log)."""
        with self._lock:
            log = self.data["requests"]
            log.append({"method": method, "path": path, "body": body, "status": status})
            del log[:-MAX_RECORDED_REQUESTS]
            self.save()

    def requests(self):
        """The request log, oldest first."""
        with self._lock:
            return copy.deepcopy(self.data["requests"])

    def clear_requests(self):
        """Empty the request log."""
        with self._lock:
            self.data["requests"] = []
            self.save()

    # Sessions

    def create_session(self, username):
        """Open a session; returns ``(session id, token)``."""
        with self._lock:
            sid = secrets.token_hex(8)
            token = secrets.token_urlsafe(24)
            self.data["sessions"][sid] = {"token": token, "user": username}
            self.save()
            return sid, token

    def session(self, session_id):
        """One session record; raises NotFound."""
        try:
            return self.data["sessions"][session_id]
        except KeyError:
            raise exception.NotFound("Session %s" % session_id)

    def token_valid(self, token):
        """True if ``token`` belongs to an open session."""
        with self._lock:
            return any(secrets.compare_digest(s["token"], token)
                       for s in self.data["sessions"].values())

    def delete_session(self, session_id):
        """Close a session; raises NotFound."""
        with self._lock:
            self.session(session_id)
            del self.data["sessions"][session_id]
            self.save()

    # Update tasks

    def resolve_target(self, uri):
        """Map a SimpleUpdate target URI to ``(system id, component id)``.

        Accepts a Processor URI, a NetworkAdapter URI (a NIC) or a
        FirmwareInventory member URI; the component id is a device id,
        ``BIOS`` or ``BMC``.
        :raises: BadRequest naming the target.
        """
        path = uri.rstrip("/") if isinstance(uri, str) else ""
        if "://" in path:
            path = "/" + path.split("://", 1)[1].split("/", 1)[-1]
        m = (re.match(r"^/redfish/v1/Systems/([^/]+)/Processors/([^/]+)$", path)
             or re.match(r"^/redfish/v1/Chassis/([^/]+)/NetworkAdapters/([^/]+)$", path))
        by_resource = bool(m)
        if m:
            sid, did = m.groups()
        else:
            m = re.match(r"^/redfish/v1/UpdateService/FirmwareInventory/([^/]+)$", path)
            if not m:
                raise exception.BadRequest(
                    "Target %r is not a Processor, NetworkAdapter or FirmwareInventory URI" % uri,
                    "ActionParameterValueNotInList",
                    [str(uri), "Targets", "UpdateService.SimpleUpdate"])
            if m.group(1) == "BMC":
                return "1", "BMC"
            sid, _, did = m.group(1).partition("-")
        try:
            if did == "BIOS" and path.startswith("/redfish/v1/UpdateService"):
                self.system(sid)
                return sid, "BIOS"
            dev = self.device(sid, did)
        except exception.NotFound:
            raise exception.BadRequest("Target %s does not exist" % uri,
                             "ActionParameterValueNotInList",
                             [str(uri), "Targets", "UpdateService.SimpleUpdate"])
        if by_resource and devices.is_nic(dev) != ("/NetworkAdapters/" in path):
            raise exception.BadRequest("Target %s does not exist" % uri,
                             "ActionParameterValueNotInList",
                             [str(uri), "Targets", "UpdateService.SimpleUpdate"])
        if dev["type"] == "CPU":
            raise exception.BadRequest("Target %s has no updateable firmware" % uri,
                             "ActionParameterValueNotInList",
                             [str(uri), "Targets", "UpdateService.SimpleUpdate"])
        return sid, did

    def create_task(self, image_uri, targets, transfer_protocol=None):
        """Start an update task; returns its id.

        The faults in force now (task_seconds, task_exception,
        version_unchanged) are captured by the task.
        """
        with self._lock:
            resolved = [self.resolve_target(t) for t in targets]
            tid = str(self.data["next_task_id"])
            self.data["next_task_id"] += 1
            now = self.clock()
            faults = self.data["faults"]
            names = ", ".join("%s-%s" % t for t in resolved)
            self.data["tasks"][tid] = {
                "id": tid, "state": "Running", "status": "OK",
                "start_time": now, "end_time": None,
                "duration": float(faults["task_seconds"]),
                "fail": bool(faults["task_exception"]),
                "keep_version": bool(faults["version_unchanged"]),
                "image_uri": image_uri, "transfer_protocol": transfer_protocol,
                "targets": [list(t) for t in resolved], "image": None,
                "milestones": [],
                "messages": [_message("TaskEvent.1.0.TaskStarted",
                                      "The task with Id '%s' has started." % tid, [tid]),
                             _message("Update.1.0.TargetDetermined",
                                      "Updating %s from %s." % (names, image_uri),
                                      [names, image_uri])],
            }
            self.save()
            return tid

    def task(self, task_id):
        """A task record (advanced to now); raises NotFound."""
        with self._lock:
            self.advance()
            try:
                return copy.deepcopy(self.data["tasks"][task_id])
            except KeyError:
                raise exception.NotFound("Task %s" % task_id)

    def cancel_task(self, task_id):
        """Cancel a running task (DSP0266: DELETE on its monitor).

        :returns: True when it was running and is now Cancelled, False when
            it had already ended. Raises NotFound for an unknown task.
        """
        with self._lock:
            self.advance()
            try:
                task = self.data["tasks"][task_id]
            except KeyError:
                raise exception.NotFound("Task %s" % task_id)
            if task["state"] != "Running":
                return False
            self._finish(task, "Cancelled", "Cancelled by the client.")
            self.save()
            return True

    def percent(self, task):
        """PercentComplete of a task: grows with time, 100 when done."""
        if task["state"] != "Running":
            return 100 if task["state"] == "Completed" else task.get("percent", 0)
        if task["duration"] <= 0:
            return 99
        elapsed = self.clock() - task["start_time"]
        return max(0, min(99, int(100 * elapsed / task["duration"])))

    def advance(self):
        """Move every running task forward to the current time."""
        with self._lock:
            changed = False
            for task in self.data["tasks"].values():
                if task["state"] == "Running":
                    changed |= self._advance_task(task)
            if changed:
                self.save()

    def _advance_task(self, task):
        changed = False
        if task["image"] is None:
            try:
                image = images.fetch(task["image_uri"])
                self._check_image(task, image)
            except exception.ImageError as exc:
                self._finish(task, "Exception", str(exc))
                return True
            task["image"] = image
            task["messages"].append(_message(
                "Update.1.0.TransferringToComponent",
                "Image %s downloaded: %s %s version %s." % (
                    task["image_uri"], image["device_type"], image["kind"], image["version"]),
                [task["image_uri"], image["version"]]))
            changed = True
        percent = self.percent(task)
        for milestone in PROGRESS_MILESTONES:
            if percent >= milestone and milestone not in task["milestones"]:
                task["milestones"].append(milestone)
                task["messages"].append(_message(
                    "TaskEvent.1.0.TaskProgressChanged",
                    "The task with Id '%s' has changed to progress %d percent complete."
                    % (task["id"], milestone), [task["id"], str(milestone)]))
                changed = True
        if self.clock() - task["start_time"] < task["duration"]:
            return changed
        if task["fail"]:
            self._finish(task, "Exception",
                         "Update failed: the device rejected the image (injected fault "
                         "task_exception).")
            return True
        if not task["keep_version"]:
            self._apply(task)
        self._finish(task, "Completed", None)
        return True

    def _check_image(self, task, image):
        for sid, did in task["targets"]:
            if did in ("BMC", "BIOS"):
                dtype = did
            else:
                dev = self.device(sid, did)
                dtype = dev["type"]
                if image["kind"] == "function" and not dev.get("slots"):
                    raise exception.ImageError(
                        "image %s is a function image but %s has no reconfiguration slots"
                        % (task["image_uri"], did))
            if image["device_type"].upper() != dtype.upper():
                raise exception.ImageError(
                    "image %s is for device type %s, not %s (%s)"
                    % (task["image_uri"], image["device_type"], did, dtype))

    def _apply(self, task):
        image = task["image"]
        for sid, did in task["targets"]:
            if did == "BMC":
                self.data["manager"]["firmware_version"] = image["version"]
            elif did == "BIOS":
                self.system(sid)["bios_version"] = image["version"]
            elif image["kind"] == "firmware":
                self.device(sid, did)["firmware_version"] = image["version"]
            else:
                for slot in self.device(sid, did)["slots"]:
                    slot["function_id"] = image["function_id"]
                    slot["function_version"] = image["version"]

    def _finish(self, task, state, error):
        task["percent"] = self.percent(task)
        task["state"] = state
        task["end_time"] = self.clock()
        if state == "Completed":
            names = ", ".join("%s-%s" % tuple(t) for t in task["targets"])
            task["messages"].append(_message(
                "Update.1.0.UpdateSuccessful",
                "The target %s has been updated successfully." % names, [names]))
            task["messages"].append(_message(
                "TaskEvent.1.0.TaskCompletedOK",
                "The task with Id '%s' has completed." % task["id"], [task["id"]]))
        else:
            task["status"] = "Critical"
            task["messages"].append(_message("Update.1.0.ApplyFailed", error, [],
                                             severity="Critical"))
            task["messages"].append(_message(
                "TaskEvent.1.0.TaskAborted",
                "The task with Id '%s' has been aborted." % task["id"], [task["id"]],
                severity="Critical"))


def _message(message_id, text, args, severity="OK"):
    return {"MessageId": message_id, "Message": text,
            "MessageArgs": [str(a) for a in args], "Severity": severity}
