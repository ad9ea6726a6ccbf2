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

"""What importing a Cyborg database would do, and every conflict settled.

:func:`make` compares a :class:`~cyborg_lite.cyborg_import.reader.Source`
with what cyborg_lite already holds (:class:`Existing`) and returns a
:class:`Plan`: the rows to insert per kind, how many were imported before,
one line per settlement (``settled``) and one per conflict that stops the
import (``refused``). Nothing here touches a database.

Identity is kept: every uuid, Cyborg's ``rp_uuid`` (its Placement provider,
``uuid3(NAMESPACE_DNS, "<host>_<deployable name>")``) and every ARQ's
``device_rp_uuid``, so Nova's allocations stay where they are. Imported
devices and deployables are marked as Cyborg's with the ``cyborg:`` prefix
of their ``source_id`` / ``region_id``; the inventory sync leaves them
alone, except that a device an inventory document also lists is adopted by
the document's region (:mod:`cyborg_lite.cyborg_import.adopt`).
"""

import collections
import dataclasses
import json

from cyborg_lite import arq_states as states

#: marks a device (``source_id``) or deployable (``region_id``) imported
#: from Cyborg; no inventory document uses ids with a colon.
PREFIX = "cyborg:"

KINDS = ("device_profiles", "devices", "deployables", "attributes",
         "attach_handles", "accelerator_requests")

_PCI_HANDLES = ("PCI", "TEST_PCI")


@dataclasses.dataclass
class Existing:
    """What cyborg_lite holds, as far as the import needs to know."""

    #: profile uuid -> (name, groups).
    profiles: dict = dataclasses.field(default_factory=dict)
    #: profile name -> uuid.
    profile_names: dict = dataclasses.field(default_factory=dict)
    device_uuids: set = dataclasses.field(default_factory=set)
    #: (hostname, pci address) -> the device's source_id.
    device_addresses: dict = dataclasses.field(default_factory=dict)
    deployable_uuids: set = dataclasses.field(default_factory=set)
    #: rp_uuid -> deployable uuid.
    rp_uuids: dict = dataclasses.field(default_factory=dict)
    attribute_uuids: set = dataclasses.field(default_factory=set)
    handle_uuids: set = dataclasses.field(default_factory=set)
    #: (deployable uuid, pci address, mdev type) -> the vGPU instance
    #: indexes (``mdev_index``) its MDEV handles hold.
    handle_instances: dict = dataclasses.field(
        default_factory=lambda: collections.defaultdict(set))
    arq_uuids: set = dataclasses.field(default_factory=set)
    #: kind -> uuids a previous import brought in (some maybe deleted).
    imported: dict = dataclasses.field(
        default_factory=lambda: collections.defaultdict(set))


@dataclasses.dataclass
class Plan:
    """The rows to insert (``{kind: [values]}``, parents named by uuid),
    the counts imported before, and the settled and refused lines."""

    rows: dict = dataclasses.field(
        default_factory=lambda: {k: [] for k in KINDS})
    before: collections.Counter = dataclasses.field(
        default_factory=collections.Counter)
    settled: list = dataclasses.field(default_factory=list)
    refused: list = dataclasses.field(default_factory=list)

    @property
    def can_apply(self):
        return not self.refused

    @property
    def empty(self):
        return not any(self.rows.values())

    def lines(self):
        """The report, one line each."""
        out = []
        for kind in KINDS:
            out.append(f"{kind}: {len(self.rows[kind])} to import, "
                       f"{self.before[kind]} imported before")
        out.extend("settled: " + line for line in self.settled)
        out.extend("refused: " + line for line in self.refused)
        if self.refused:
            out.append(f"The import cannot be done: {len(self.refused)} "
                       "conflict(s) above; nothing was changed.")
        elif self.empty:
            out.append("Nothing to import: everything was imported before.")
        return out


def _json(value, what, plan, default):
    if value is None or value == "":
        return default
    if isinstance(value, (dict, list)):
        return value
    try:
        return json.loads(value)
    except ValueError:
        plan.refused.append(f"{what} is not JSON: {value!r}")
        return default


def _pci(info):
    """``dddd:bb:dd.f`` from Cyborg's ``{domain, bus, device, function}``;
    Cyborg writes ``device`` without its leading zero ("0")."""
    return (f"{info['domain'].lower()}:{info['bus'].lower()}:"
            f"{int(info['device'], 16):02x}.{info['function']}")


class _Planner:
    def __init__(self, source, existing, free_orphan_handles):
        self.src = source
        self.rows = source.rows
        self.existing = existing
        self.free_orphans = free_orphan_handles
        self.plan = Plan()
        #: source id -> cyborg_lite uuid of the row it becomes (imported
        #: now or before); a missing id is a row not imported.
        self.profile_uuid = {}
        self.profile_name = {}
        self.device = {}
        self.deployable = {}
        self.handle = {}
        self.short_devices = 0
        #: source deployable id -> True for a NIC's.
        self.nic_deployables = {}
        #: uuids of NIC handles Cyborg knows no physical network for.
        self.unnamed_nic_handles = []
        #: the vgpu_mark of each MDEV handle imported, by handle id.
        self.marks = {}
        #: source ids of the devices cyborg_lite has from an inventory.
        self.twins = set()
        self.cpids = collections.defaultdict(list)
        for cpid in self.rows["controlpath_ids"]:
            self.cpids[cpid["device_id"]].append(cpid)

    def settle(self, line):
        self.plan.settled.append(line)

    def refuse(self, line):
        self.plan.refused.append(line)

    def add(self, kind, values):
        self.plan.rows[kind].append(values)

    def before(self, kind, uuid, present):
        """True (and counted) when ``uuid`` was imported before or is in
        cyborg_lite (``present``); a row imported and deleted since is
        not brought back."""
        if uuid in present or uuid in self.existing.imported[kind]:
            self.plan.before[kind] += 1
            return True
        return False

    def run(self):
        self.profiles()
        self.devices()
        self.deployables()
        self.attributes()
        holders = self.holders()
        self.handles(holders)
        self.arqs(holders)
        return self.plan

    def profiles(self):
        for row in self.rows["device_profiles"]:
            what = f"device profile {row['name']} ({row['uuid']})"
            data = _json(row["profile_json"], what + " profile_json",
                         self.plan, {})
            groups = data.get("groups") if isinstance(data, dict) else None
            if not isinstance(groups, list) or not groups:
                self.refuse(f"{what} has no groups")
                continue
            known = self.existing.profiles.get(row["uuid"])
            by_name = self.existing.profile_names.get(row["name"])
            if row["uuid"] in self.existing.imported["device_profiles"] or (
                    known is not None and known[0] == row["name"]):
                self.plan.before["device_profiles"] += 1
                if known is None:
                    continue
            elif known is not None:
                self.refuse(f"{what}: cyborg_lite has this uuid under the "
                            f"name {known[0]}")
                continue
            elif by_name is not None:
                if self.existing.profiles[by_name][1] != groups:
                    self.refuse(f"{what}: cyborg_lite has another profile "
                                f"of this name ({by_name}) with other "
                                "groups; rename one of them first")
                    continue
                self.settle(f"{what}: cyborg_lite has the same profile "
                            f"as {by_name}; its ARQs are imported under "
                            "that one")
                self.profile_uuid[row["id"]] = by_name
                self.profile_name[row["id"]] = row["name"]
                continue
            else:
                self.add("device_profiles", {
                    "uuid": row["uuid"], "name": row["name"],
                    "description": row["description"], "groups": groups,
                    "created_at": row["created_at"]})
            self.profile_uuid[row["id"]] = row["uuid"]
            self.profile_name[row["id"]] = row["name"]

    def _device_address(self, row, what):
        for cpid in self.cpids.get(row["id"], ()):
            info = _json(cpid["cpid_info"], f"{what} controlpath_id",
                         self.plan, None)
            if cpid["cpid_type"] == "PCI" and isinstance(info, dict):
                try:
                    return _pci(info)
                except (KeyError, ValueError, AttributeError):
                    self.refuse(f"{what}: controlpath_id {cpid['uuid']} "
                                f"holds no PCI address: {info!r}")
                    return None
        self.refuse(f"{what} has no PCI controlpath_id: nothing could "
                    "attach it")
        return None

    def devices(self):
        for row in self.rows["devices"]:
            what = f"device {row['uuid']} on {row['hostname']}"
            if self.before("devices", row["uuid"],
                           self.existing.device_uuids):
                if row["uuid"] in self.existing.device_uuids:
                    self.device[row["id"]] = row["uuid"]
                continue
            address = self._device_address(row, what)
            if address is None:
                continue
            owner = self.existing.device_addresses.get(
                (row["hostname"], address))
            if owner is not None:
                self.twins.add(row["id"])
                self.settle(
                    f"{what} at {address}: cyborg_lite has this device from "
                    f"the inventory of {row['hostname']} (id {owner}); "
                    "imported, then adopted by the inventory's region: "
                    "Nova's allocations move to its provider and its ARQs "
                    "to its handles (needs [placement]; until then the "
                    "handles Cyborg's ARQs hold stay reserved there)")
            board = _json(row["std_board_info"], f"{what} std_board_info",
                          self.plan, {})
            self.add("devices", {
                "uuid": row["uuid"], "source_id": PREFIX + row["uuid"],
                "type": row["type"], "vendor": row["vendor"],
                "model": row["model"], "std_board_info": board,
                "vendor_board_info": row["vendor_board_info"],
                "hostname": row["hostname"], "pci_address": address,
                "program_mode": "single", "firmware_version": None,
                "status": row["status"], "created_at": row["created_at"]})
            self.device[row["id"]] = row["uuid"]
        if self.plan.rows["devices"] and self.src.schema.has_device_state:
            self.settle("devices.device_state (Cyborg 17) is not kept: "
                        "cyborg_lite keeps a device's status (enabled or "
                        "maintaining) only")

    def deployables(self):
        types = {d["id"]: d["type"] for d in self.rows["devices"]}
        rcs = {a["deployable_id"]: a["value"]
               for a in self.rows["attributes"] if a["key"] == "rc"}
        taken = dict(self.existing.rp_uuids)
        by_id = self.src.by_id("deployables")
        for row in self.rows["deployables"]:
            what = f"deployable {row['name']} ({row['uuid']})"
            if self.before("deployables", row["uuid"],
                           self.existing.deployable_uuids):
                if row["uuid"] in self.existing.deployable_uuids:
                    self.deployable[row["id"]] = row["uuid"]
                continue
            device = self.device.get(row["device_id"])
            if device is None:
                if row["device_id"] not in types:
                    self.settle(f"{what}: its device (id "
                                f"{row['device_id']}) is gone; not "
                                "imported, nor its handles")
                continue
            if not row["rp_uuid"]:
                self.settle(f"{what} has no resource provider (Cyborg "
                            "never reported it to Placement): not "
                            "imported, nor its handles")
                continue
            if row["rp_uuid"] in taken:
                self.refuse(f"{what}: its resource provider "
                            f"{row['rp_uuid']} already belongs to "
                            f"deployable {taken[row['rp_uuid']]}")
                continue
            taken[row["rp_uuid"]] = row["uuid"]
            rc = rcs.get(row["id"])
            if rc is None:
                rc = types[row["device_id"]]
                self.settle(f"{what} has no rc attribute: resource class "
                            f"{rc} (its device type) assumed")

            def uuid_of(ref):
                return by_id[ref]["uuid"] if ref in by_id else None

            self.add("deployables", {
                "uuid": row["uuid"], "device_uuid": device,
                "region_id": PREFIX + row["uuid"],
                "parent_uuid": uuid_of(row["parent_id"]),
                "root_uuid": uuid_of(row["root_id"]),
                "name": row["name"],
                "num_accelerators": row["num_accelerators"],
                "rp_uuid": row["rp_uuid"], "resource_class": rc,
                "driver_name": row["driver_name"],
                "bitstream_id": row["bitstream_id"],
                "created_at": row["created_at"]})
            self.deployable[row["id"]] = row["uuid"]
            if row["device_id"] not in self.twins:
                self.settle(f"{what}: no Ironic inventory region of its "
                            "host has its device's PCI address; kept "
                            f"usable under Cyborg's provider "
                            f"{row['rp_uuid']}")

    def attributes(self):
        for row in self.rows["attributes"]:
            if self.before("attributes", row["uuid"],
                           self.existing.attribute_uuids):
                continue
            deployable = self.deployable.get(row["deployable_id"])
            if deployable is None:
                continue
            if len(row["key"]) > 255 or len(row["value"]) > 255:
                self.refuse(f"attribute {row['uuid']} of deployable "
                            f"{deployable}: key or value longer than 255 "
                            "characters")
                continue
            self.add("attributes", {
                "uuid": row["uuid"], "deployable_uuid": deployable,
                "key": row["key"], "value": row["value"],
                "created_at": row["created_at"]})

    def holders(self):
        """``{handle id: [Bound ARQ rows naming it]}``."""
        result = collections.defaultdict(list)
        for arq in self.rows["extended_accelerator_requests"]:
            if arq["attach_handle_id"] is not None and (
                    arq["state"] == states.BOUND):
                result[arq["attach_handle_id"]].append(arq)
        return result

    def _handle_address(self, row, what):
        info = _json(row["attach_info"], what + " attach_info", self.plan,
                     {})
        try:
            if row["attach_type"] in _PCI_HANDLES:
                if len(info["device"]) < 2:
                    self.short_devices += 1
                return _pci(info), ""
            if row["attach_type"] == "MDEV":
                cpid = next(c for c in self.rows["controlpath_ids"]
                            if c["id"] == row["cpid_id"])
                address = _pci(json.loads(cpid["cpid_info"]))
                self.marks[row["id"]] = info.get("vgpu_mark")
                return address, info["asked_type"]
        except (KeyError, ValueError, AttributeError, StopIteration):
            pass
        self.refuse(f"{what}: cannot tell its PCI address from "
                    f"{row['attach_type']} {row['attach_info']!r}")
        return None

    def _physnet(self, row, deployable_id, what):
        """The handle's ``physical_network`` (Cyborg's NIC driver keeps it
        in ``attach_info``), with a line for a NIC handle that has none."""
        info = _json(row["attach_info"], what + " attach_info", self.plan,
                     {})
        physnet = info.get("physical_network") if isinstance(
            info, dict) else None
        if physnet is None and self.nic_deployables.get(deployable_id):
            self.unnamed_nic_handles.append(row["uuid"])
        return physnet

    def _instances(self, found):
        """``{handle id: mdev_index}`` for the handles ``found``
        (``[(row, deployable uuid, (address, mdev type))]``); a PCI handle
        at an address its deployable has another handle at gets none.

        Cyborg's NVIDIA driver stores one MDEV handle per possible vGPU
        instance of its parent, marked ``<type>_<n>``: each is instance n
        when that n is free, else the lowest free one.
        """
        groups = collections.defaultdict(list)
        for row, deployable, address in found:
            groups[(deployable,) + address].append(row)
        result = {}
        for key, rows in groups.items():
            if not key[2]:
                result[rows[0]["id"]] = 0
                continue
            taken = set(self.existing.handle_instances.get(key, ()))
            later = []
            for row in rows:
                head, _, tail = (self.marks.get(row["id"]) or "").rpartition(
                    "_")
                if head == key[2] and tail.isdigit() and (
                        int(tail) not in taken):
                    result[row["id"]] = int(tail)
                    taken.add(int(tail))
                else:
                    later.append(row)
            index = 0
            for row in later:
                while index in taken:
                    index += 1
                result[row["id"]] = index
                taken.add(index)
        return result

    def handles(self, holders):
        types = {d["id"]: d["type"] for d in self.rows["devices"]}
        self.nic_deployables = {
            d["id"]: types.get(d["device_id"]) == "NIC"
            for d in self.rows["deployables"]}
        found = []
        for row in self.rows["attach_handles"]:
            what = f"attach handle {row['uuid']}"
            if self.before("attach_handles", row["uuid"],
                           self.existing.handle_uuids):
                if row["uuid"] in self.existing.handle_uuids:
                    self.handle[row["id"]] = row["uuid"]
                continue
            deployable = self.deployable.get(row["deployable_id"])
            if deployable is None:
                continue
            address = self._handle_address(row, what)
            if address is not None:
                found.append((row, deployable, address))
        instances = self._instances(found)
        for row, deployable, address in found:
            what = f"attach handle {row['uuid']}"
            if row["id"] not in instances:
                self.refuse(f"{what}: deployable {deployable} has another "
                            f"handle at {address[0]}")
                continue
            held_by = holders.get(row["id"], [])
            in_use = bool(row["in_use"])
            arq = None
            if len(held_by) > 1:
                self.refuse(f"{what} is held by {len(held_by)} Bound ARQs "
                            f"({', '.join(a['uuid'] for a in held_by)})")
                continue
            if held_by:
                arq = held_by[0]["uuid"]
                if not in_use:
                    self.settle(f"{what} is not marked in use but Bound "
                                f"ARQ {arq} holds it: imported in use")
                in_use = True
            elif in_use and self.free_orphans:
                self.settle(f"{what} is marked in use by no ARQ: imported "
                            "free (--free-orphan-handles)")
                in_use = False
            elif in_use:
                self.settle(f"{what} is marked in use by no ARQ: imported "
                            "in use, so it is never handed out; if no "
                            "instance uses it, import with "
                            "--free-orphan-handles to import it free")
            self.add("attach_handles", {
                "uuid": row["uuid"], "deployable_uuid": deployable,
                "type": row["attach_type"], "pci_address": address[0],
                "mdev_type": address[1],
                "mdev_index": instances[row["id"]], "in_use": in_use,
                "physical_network": self._physnet(
                    row, row["deployable_id"], what),
                "arq_uuid": arq, "created_at": row["created_at"]})
            self.handle[row["id"]] = row["uuid"]
        if self.unnamed_nic_handles:
            self.settle(
                f"{len(self.unnamed_nic_handles)} attach handle(s) of NICs "
                f"have no physical_network in Cyborg "
                f"({', '.join(self.unnamed_nic_handles)}): imported, but "
                "cyborg_lite binds no ARQ to them (Nova could not plug a "
                "port into them) until an inventory document names their "
                "physical network")
        self._marks_line()
        if self.short_devices:
            self.settle(f"{self.short_devices} attach handle(s) have a "
                        "one-digit PCI device in attach_info (Cyborg writes "
                        "\"0\"): answered with two digits (\"00\"), the "
                        "same address to Nova")

    def _marks_line(self):
        """One line for the MDEV handles whose ``vgpu_mark`` cyborg_lite
        answers otherwise."""
        handles = {h["uuid"]: h for h in self.plan.rows["attach_handles"]}
        rows = {r["id"]: r["uuid"] for r in self.rows["attach_handles"]}
        changed = []
        for row_id, mark in sorted(self.marks.items()):
            handle = handles.get(rows[row_id])
            if handle is not None and mark is not None and mark != (
                    f"{handle['mdev_type']}_{handle['uuid']}"):
                changed.append(mark)
        if changed:
            self.settle(f"{len(changed)} MDEV attach handle(s) carry "
                        f"Cyborg's vgpu_mark (e.g. {changed[0]}): each is "
                        "a vGPU instance of its own, with Cyborg's uuid "
                        "(the name of the mdev Nova creates for it); its "
                        "vgpu_mark is answered as <type>_<handle uuid>, "
                        "Nova reads only its address and asked_type")

    def _arq_state(self, row, what):
        """The state to import ``row`` in, and its deployable and handle
        uuids (None for each it does not keep)."""
        state = row["state"]
        deployable = self.deployable.get(row["deployable_id"])
        handle = self.handle.get(row["attach_handle_id"])
        if state == states.BIND_STARTED:
            self.settle(f"{what} was left in BindStarted by Cyborg (bound "
                        f"to provider {row['device_rp_uuid']}, it never "
                        "finished nor rolled back): imported as "
                        "BindFailed, so Nova's delete cleans it up")
            return states.BIND_FAILED, None, None
        if state != states.BOUND:
            return state, None, None
        if row["deployable_id"] is not None and deployable is None:
            self.settle(f"{what} is Bound to deployable id "
                        f"{row['deployable_id']}, which is gone or not "
                        "imported: imported as BindFailed")
            return states.BIND_FAILED, None, None
        if handle is None:
            self.settle(f"{what} is Bound but holds no importable attach "
                        "handle: imported as BindFailed")
            return states.BIND_FAILED, None, None
        return state, deployable, handle

    def arqs(self, holders):
        for row in self.rows["extended_accelerator_requests"]:
            what = f"ARQ {row['uuid']} (instance {row['instance_uuid']})"
            if self.before("accelerator_requests", row["uuid"],
                           self.existing.arq_uuids):
                continue
            if row["state"] not in states.ALL:
                self.refuse(f"{what} is in state {row['state']!r}, which "
                            "cyborg_lite does not know")
                continue
            profile = self.profile_uuid.get(row["device_profile_id"])
            if profile is None:
                self.refuse(f"{what}: its device profile (id "
                            f"{row['device_profile_id']}) is gone or not "
                            "imported")
                continue
            state, deployable, handle = self._arq_state(row, what)
            self.add("accelerator_requests", {
                "uuid": row["uuid"], "state": state,
                "profile_uuid": profile,
                "device_profile_name":
                    self.profile_name[row["device_profile_id"]],
                "device_profile_group_id": row["device_profile_group_id"],
                "project_id": row["project_id"],
                "hostname": row["hostname"],
                "device_rp_uuid": row["device_rp_uuid"],
                "instance_uuid": row["instance_uuid"],
                "deployable_uuid": deployable, "handle_uuid": handle,
                "created_at": row["created_at"],
                "updated_at": row["updated_at"]})


def make(source, existing, free_orphan_handles=False):
    """The :class:`Plan` importing ``source`` next to ``existing``."""
    return _Planner(source, existing, free_orphan_handles).run()
