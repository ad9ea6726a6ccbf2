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

"""``sim``: simulated accelerators whose state lives in a directory.

One JSON file per device (``<pci address>.json``), replaced atomically, so a
reader never sees half a write. Programming first writes a ``programming``
marker (target function, pid, start time), waits ``sim_program_seconds``,
then writes the new function. If the agent dies in between, the marker
stays: the next reading reports the region as ``error`` ("interrupted"), never
the old or the new function. Failure injection: ``[agent] sim_fail_program``
or a ``FAIL_PROGRAM`` file in the state directory.

The devices come from an inventory document (the shared schema), by default
the shipped ``etc/cyborg_lite/inventory.example.json``.
"""

import datetime
import json
import os
import sys
import tempfile
import threading
import time

from accel_common import inventory
from cyborg_lite.agent import exception
from cyborg_lite.agent.drivers import base

FAULT_FILE = "FAIL_PROGRAM"


def default_inventory_file():
    """The shipped example inventory: in the source tree or installed."""
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [
        os.path.join(here, "..", "..", "..", "etc", "cyborg_lite",
                     "inventory.example.json"),
        os.path.join(sys.prefix, "etc", "cyborg_lite",
                     "inventory.example.json"),
    ]
    for candidate in candidates:
        if os.path.exists(candidate):
            return os.path.normpath(candidate)
    raise exception.AgentError(
        reason="sim driver: no [agent] sim_inventory_file set and the "
               "shipped inventory.example.json is not installed")


def _now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat()


def _file_name(pci_address):
    return pci_address.lower().replace(":", "_") + ".json"


def write_json_atomic(path, data):
    """Replace ``path`` with ``data`` in one rename (never half written)."""
    directory = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-",
                               suffix=".json")
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(data, handle, indent=2, sort_keys=True)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def read_state(state_dir):
    """Every simulated device's state, by PCI address (for tests, tools)."""
    devices = {}
    for name in sorted(os.listdir(state_dir)):
        if name.endswith(".json") and not name.startswith("."):
            with open(os.path.join(state_dir, name)) as handle:
                device = json.load(handle)
            devices[device["pci_address"]] = device
    return devices


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class SimDriver(base.AcceleratorDriver):
    """Simulated FPGAs/GPUs kept in ``[agent] sim_state_dir``."""

    name = "sim"

    def __init__(self, conf):
        super().__init__(conf)
        self.state_dir = conf.agent.sim_state_dir
        self._lock = threading.Lock()
        # NOTE(agent): regions this process is programming right now; a
        # "programming" marker not in here was left by a dead process.
        self._active = set()
        os.makedirs(self.state_dir, exist_ok=True)
        with self._lock:
            if not self._device_files():
                self._seed()
            self._mark_interrupted()

    def _device_files(self):
        return [n for n in os.listdir(self.state_dir)
                if n.endswith(".json") and not n.startswith(".")]

    def _seed(self):
        path = (self.conf.agent.sim_inventory_file
                or default_inventory_file())
        try:
            with open(path) as handle:
                document = inventory.validate(json.load(handle))
        except (OSError, ValueError) as exc:
            raise exception.AgentError(
                reason=f"sim driver: cannot read inventory {path}: {exc}")
        for device in document["devices"]:
            state = {key: device.get(key) for key in (
                "id", "type", "vendor_id", "product_id", "vendor", "model",
                "pci_address", "program_mode")}
            state["regions"] = [{
                "id": region["id"],
                "function_id": region.get("function_id"),
                "state": base.READY,
                "attach_handles": region.get("attach_handles", []),
            } for region in device["regions"]]
            self._save(state)

    def _mark_interrupted(self):
        for name in self._device_files():
            device = self._load_file(os.path.join(self.state_dir, name))
            changed = False
            for region in device["regions"]:
                marker = region.get("programming")
                if (region["state"] == base.PROGRAMMING and marker
                        and not _pid_alive(marker.get("pid", 0))):
                    region["state"] = base.ERROR
                    region["function_id"] = None
                    region["last_error"] = self._interrupted(marker)
                    changed = True
            if changed:
                self._save(device)

    @staticmethod
    def _interrupted(marker):
        return (f"programming to {marker.get('target_function_id')!r} "
                f"started {marker.get('started_at')} was interrupted; "
                f"the region's content is unknown")

    def _load_file(self, path):
        with open(path) as handle:
            return json.load(handle)

    def _load(self, pci_address):
        path = os.path.join(self.state_dir, _file_name(pci_address))
        try:
            return self._load_file(path)
        except FileNotFoundError:
            raise exception.RegionNotFound(pci_address=pci_address,
                                           region_id="(any)")

    def _save(self, device):
        write_json_atomic(
            os.path.join(self.state_dir, _file_name(device["pci_address"])),
            device)

    @staticmethod
    def _region(device, region):
        for candidate in device["regions"]:
            if candidate["id"] == region.region_id:
                return candidate
        raise exception.RegionNotFound(pci_address=region.pci_address,
                                       region_id=region.region_id)

    def _fault(self):
        if self.conf.agent.sim_fail_program:
            return "failure injected by [agent] sim_fail_program"
        path = os.path.join(self.state_dir, FAULT_FILE)
        if os.path.exists(path):
            with open(path) as handle:
                text = handle.read().strip()
            return text or f"failure injected by {path}"
        return None

    def discover(self):
        """The simulated devices with their regions and attach handles."""
        with self._lock:
            devices = [self._load_file(os.path.join(self.state_dir, n))
                       for n in sorted(self._device_files())]
        for device in devices:
            for region in device["regions"]:
                reading = self._reading(device, region)
                region["function_id"] = reading["function_id"]
                region["state"] = reading["state"]
                region.pop("programming", None)
        return devices

    def _reading(self, device, region):
        key = (device["pci_address"], region["id"])
        if region["state"] == base.PROGRAMMING:
            if key in self._active:
                return base.reading(None, base.PROGRAMMING,
                                    "programming in progress")
            return base.reading(None, base.ERROR, self._interrupted(
                region.get("programming") or {}))
        if region["state"] == base.ERROR:
            return base.reading(None, base.ERROR, region.get("last_error"))
        return base.reading(region.get("function_id"))

    def current_function(self, region):
        """Read back the function from the state file."""
        with self._lock:
            device = self._load(region.pci_address)
            return self._reading(device, self._region(device, region))

    def program(self, region, image_path, function_id):
        """Simulate programming: marker, wait, then the new function."""
        key = tuple(region)
        with self._lock:
            device = self._load(region.pci_address)
            entry = self._region(device, region)
            entry["state"] = base.PROGRAMMING
            entry["function_id"] = None
            entry["programming"] = {
                "target_function_id": function_id,
                "image": os.path.basename(image_path),
                "pid": os.getpid(),
                "started_at": _now(),
            }
            self._save(device)
            self._active.add(key)
        try:
            deadline = time.monotonic() + self.conf.agent.sim_program_seconds
            while time.monotonic() < deadline:
                time.sleep(min(0.05, max(0, deadline - time.monotonic())))
            fault = self._fault()
            with self._lock:
                device = self._load(region.pci_address)
                entry = self._region(device, region)
                entry.pop("programming", None)
                if fault:
                    entry["state"] = base.ERROR
                    entry["last_error"] = fault
                else:
                    entry["state"] = base.READY
                    entry["function_id"] = function_id
                    entry["image"] = os.path.basename(image_path)
                    entry["programmed_at"] = _now()
                    entry.pop("last_error", None)
                self._save(device)
        finally:
            self._active.discard(key)
        if fault:
            raise exception.ProgrammingFailed(
                pci_address=region.pci_address, region_id=region.region_id,
                reason=fault)

    def reset(self, region):
        """Clear the region: no function, state ready, error forgotten."""
        with self._lock:
            device = self._load(region.pci_address)
            entry = self._region(device, region)
            entry.update(state=base.READY, function_id=None)
            for key in ("programming", "last_error", "image"):
                entry.pop(key, None)
            self._save(device)
