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


"""Apply an inventory document (:mod:`accel_common.inventory`) to the
database.

Independent of where the document came from (a file, an Ironic node): the
caller passes the decoded document. Devices, deployables (one per region,
``rp_uuid`` from the document) and attach handles of ``document["host"]``
are created, updated or retired so the database matches the document.
An attach handle in use is never removed under a bound ARQ: it (and its
deployable and device) is marked ``retired`` and keeps working until the
ARQ is unbound; the next sync then removes it. Applying the same document
twice changes nothing.

An ``MDEV`` handle listed n times is n vGPU instances of its type on its
parent: n handles, numbered (``mdev_index``), each with its own uuid, which
the mdev Nova creates for it is named after. Handles are matched by
address, type and instance, so their uuids survive every sync; when the
count shrinks, free instances go first (see :func:`_kept_instances`).

A device without a PCI address (schema 1.1, one the host agent did not
complete) keeps the address, vendor and product ids the database already
knows for it (by its id); one never seen with an address is not stored
(nothing could attach it) and is named in the summary's ``incomplete``.

A region's ``function_id`` in the document is what the BMC last reported;
the function cyborg_lite loads in-band (a bind or a pool) is its own. The
document's value is taken when a region is first imported and afterwards
only when it differs from what the document reported before (see
:func:`_sync_function`).
"""

import collections

from oslo_log import log as logging
import sqlalchemy as sa
from sqlalchemy.orm import attributes

from accel_common import inventory
from accel_common.placement import tree
from cyborg_lite import states
from cyborg_lite.cyborg_import import adopt
from cyborg_lite.cyborg_import import plan as cyborg_plan
from cyborg_lite.db import engine as db_engine
from cyborg_lite.db import models

LOG = logging.getLogger(__name__)


def _set(row, values):
    changed = False
    for key, value in values.items():
        if getattr(row, key) != value:
            setattr(row, key, value)
            changed = True
    return changed


def _deployable_name(host, device, region):
    name = f"{host}_{device['pci_address']}"
    if len(device["regions"]) > 1:
        name += f"_{region['id']}"
    return name


class _Summary:
    def __init__(self):
        self.counts = collections.defaultdict(collections.Counter)
        #: regions whose function the document changed (out of band):
        #: [{"rp_uuid", "function_id", "trait"}], for Placement.
        self.functions_taken = []
        #: ids of address-less devices never seen with an address.
        self.incomplete = []
        #: traits to take off regions' providers, for Placement: the
        #: CUSTOM_<PHYSNET> of a physical network a NIC region's handles
        #: left, a trait the region's device spec no longer gives:
        #: {rp uuid: [trait]}.
        self.physnets_left = {}

    def add(self, kind, what):
        self.counts[kind][what] += 1

    def as_dict(self, host):
        result = {"host": host}
        for kind in ("devices", "deployables", "attach_handles"):
            counter = self.counts[kind]
            result[kind] = {k: counter[k] for k in
                            ("created", "updated", "unchanged", "retired",
                             "deleted")}
        result["functions_taken"] = self.functions_taken
        result["incomplete"] = sorted(self.incomplete)
        result["physnets_left"] = self.physnets_left
        result["changed"] = any(
            counter[k] for counter in self.counts.values()
            for k in ("created", "updated", "retired", "deleted"))
        return result


def _physnets_left(deployable, existing, wanted, summary):
    """Note the physical networks none of ``wanted`` names any more that
    ``deployable``'s live handles named: their traits must leave its
    provider, or a profile asking for the old network lands on it."""
    before = {h.physical_network for h in existing
              if h.physical_network and not h.retired}
    after = {item.get("physical_network") for item in wanted}
    left = before - after
    if left:
        summary.physnets_left[deployable.rp_uuid] = sorted(
            inventory.physnet_trait(net) for net in left)


def _kept_instances(rows, count):
    """Which of one (parent, type)'s handle rows stay its ``count``
    instances: those in use first, then the free ones by index, so that a
    shrinking count drops free instances and every kept row keeps its
    uuid."""
    rows = sorted(rows, key=lambda h: (not h.in_use, h.mdev_index))
    return rows[:count], rows[count:]


def _free_indexes(rows, count):
    """``count`` instance indexes no row of ``rows`` holds, lowest first."""
    held = {h.mdev_index for h in rows}
    found, index = [], 0
    while len(found) < count:
        if index not in held:
            found.append(index)
        index += 1
    return found


def _sync_handles(session, deployable, wanted, summary):
    """Make ``deployable``'s handles match ``wanted`` (None: leave them).

    An MDEV handle listed n times is n vGPU instances of that type on that
    parent, one row (and uuid) each; see :func:`_kept_instances`.
    """
    existing = session.execute(
        sa.select(models.AttachHandle).where(
            models.AttachHandle.deployable_id == deployable.id)
    ).scalars().all()
    if wanted is None:
        return sum(1 for h in existing if not h.retired)
    _physnets_left(deployable, existing, wanted, summary)
    by_key = collections.defaultdict(list)
    for handle in existing:
        by_key[(handle.pci_address, handle.mdev_type)].append(handle)
    counts = collections.Counter()
    items = {}
    for item in wanted:
        key = (item["pci_address"].lower(), item.get("mdev_type", ""))
        counts[key] += 1
        items.setdefault(key, item)
    for key, count in counts.items():
        item = items[key]
        values = {"type": item["type"],
                  "physical_network": item.get("physical_network"),
                  "retired": False}
        rows = by_key.pop(key, [])
        kept, dropped = _kept_instances(rows, count)
        for handle in kept:
            if _set(handle, values):
                summary.add("attach_handles", "updated")
            else:
                summary.add("attach_handles", "unchanged")
        for handle in dropped:
            _retire_handle(session, handle, summary)
        for index in _free_indexes(rows, count - len(kept)):
            session.add(models.AttachHandle(
                uuid=db_engine.new_uuid(), deployable_id=deployable.id,
                pci_address=key[0], mdev_type=key[1], mdev_index=index,
                in_use=False, **values))
            summary.add("attach_handles", "created")
    for rows in by_key.values():
        for handle in rows:
            _retire_handle(session, handle, summary)
    return len(wanted)


def _retire_handle(session, handle, summary):
    if handle.in_use:
        if not handle.retired:
            handle.retired = True
            summary.add("attach_handles", "retired")
        return True
    session.delete(handle)
    summary.add("attach_handles", "deleted")
    return False


def _retire_deployable(session, deployable, summary):
    """Remove a deployable gone from the document; keep it (retired) while
    one of its handles is in use. :returns: True when kept."""
    handles = session.execute(
        sa.select(models.AttachHandle).where(
            models.AttachHandle.deployable_id == deployable.id)
    ).scalars().all()
    kept = [h for h in handles if _retire_handle(session, h, summary)]
    if kept:
        if not deployable.retired:
            deployable.retired = True
            summary.add("deployables", "retired")
        return True
    session.execute(sa.delete(models.Attribute).where(
        models.Attribute.deployable_id == deployable.id))
    session.flush()
    session.delete(deployable)
    summary.add("deployables", "deleted")
    return False


def _is_owned_attribute(key):
    return key == "rc" or (key.startswith("trait") and key[5:].isdigit())


def _sync_attributes(session, deployable, traits, summary):
    """Keep the attributes the inventory owns (``rc``, and ``trait0``,
    ``trait1``... of the region's ``traits``, as real Cyborg's drivers
    name them; None: leave those); leave the others. A trait the region
    no longer has is noted in ``summary.physnets_left``, to be taken off
    its provider.

    Attributes an admin created through the API are not the document's to
    remove.
    """
    existing = [attr for attr in session.execute(
        sa.select(models.Attribute).where(
            models.Attribute.deployable_id == deployable.id)
        .order_by(models.Attribute.id)).scalars()
        if _is_owned_attribute(attr.key)]
    if traits is None:
        traits = [attr.value for attr in existing if attr.key != "rc"]
    traits = sorted(traits)
    wanted = {"rc": deployable.resource_class}
    wanted.update((f"trait{index}", trait)
                  for index, trait in enumerate(traits))
    left = {attr.value for attr in existing
            if attr.key != "rc"} - set(traits)
    if left:
        noted = summary.physnets_left.setdefault(deployable.rp_uuid, [])
        noted.extend(sorted(left - set(noted)))
    for attr in existing:
        if wanted.get(attr.key) == attr.value:
            wanted.pop(attr.key)
        else:
            session.delete(attr)
    for key, value in wanted.items():
        session.add(models.Attribute(uuid=db_engine.new_uuid(),
                                     deployable_id=deployable.id, key=key,
                                     value=value))


def _sync_function(session, deployable, region):
    """Take the document's ``function_id`` for an existing region only when
    it is news.

    A BMC rarely learns of an in-band (partial) reconfiguration, so the
    document keeps reporting the function it saw last. A reported value
    that differs from the one remembered at the previous sync means the
    function was changed out of band (e.g. a whole-card image loaded by
    Ironic): it becomes the region's function, and the ``bitstream_id``
    cyborg_lite loaded before no longer runs. The same value again leaves
    the region's function alone; so does ``null`` (nothing reported). A
    region in ``programming`` belongs to its programmer: its function is
    not touched, but the report is remembered, so that it cannot later
    pass for news over the function the programming loads.

    :returns: ``(changed, taken)``: whether the row changed, and whether
        its function is now the reported one because of this report.
    """
    reported = region.get("function_id")
    if reported is None or reported == deployable.reported_function_id:
        return False, False
    deployable.reported_function_id = reported
    if (deployable.function_id == reported
            or deployable.state == states.RegionState.PROGRAMMING):
        return True, False
    running = deployable.function_id
    # NOTE(cyborg_lite): conditional on what was read, so a programming
    # that started or finished since then keeps the region (it is newer
    # than the document, which was read before this transaction).
    took = session.execute(
        sa.update(models.Deployable)
        .where(models.Deployable.id == deployable.id,
               models.Deployable.state != states.RegionState.PROGRAMMING,
               models.Deployable.function_id.is_not_distinct_from(running))
        .values(function_id=reported, bitstream_id=None,
                updated_at=models.utcnow())
        .execution_options(synchronize_session=False)).rowcount == 1
    if took:
        for key, value in (("function_id", reported),
                           ("bitstream_id", None)):
            attributes.set_committed_value(deployable, key, value)
        LOG.info("Region %s: the inventory document reports function %r "
                 "(was %r): loaded out of band, taken", deployable.uuid,
                 reported, running)
    return True, took


def _sync_device(session, host, doc_device, device, summary):
    # NOTE(cyborg_lite): Cyborg's ``vendor`` is the PCI vendor id; a device
    # completed in-band may still lack ids, its name stands in then.
    values = {"type": doc_device["type"],
              "vendor": (doc_device.get("vendor_id")
                         or doc_device.get("vendor") or "unknown"),
              "model": (doc_device.get("model")
                        or doc_device.get("product_id") or "unknown"),
              "std_board_info": {
                  "vendor_id": doc_device.get("vendor_id"),
                  "product_id": doc_device.get("product_id"),
                  "vendor": doc_device.get("vendor"),
                  "pci_address": doc_device["pci_address"].lower()},
              "pci_address": doc_device["pci_address"].lower(),
              "program_mode": doc_device["program_mode"],
              "firmware_version": doc_device.get("firmware_version"),
              "health": doc_device.get("health"),
              "retired": False}
    if device is None:
        device = models.Device(uuid=db_engine.new_uuid(), hostname=host,
                               source_id=doc_device["id"],
                               status=states.DeviceStatus.ENABLED,
                               **values)
        session.add(device)
        session.flush()
        summary.add("devices", "created")
        changed = True
    else:
        changed = _set(device, values)
    deployables = {d.region_id: d for d in session.execute(
        sa.select(models.Deployable).where(
            models.Deployable.device_id == device.id)).scalars()}
    seen = set()
    for region in doc_device["regions"]:
        seen.add(region["id"])
        dep = deployables.get(region["id"])
        in_band = "attach_handles" in region
        # NOTE(cyborg_lite): a document without the region's handles is
        # the out-of-band one (the agent did not answer): what the agent's
        # device spec gave the region (class, traits) stays, as its
        # handles do.
        values = {"name": _deployable_name(host, doc_device, region),
                  "rp_uuid": region["rp_uuid"],
                  "resource_class": (region["resource_class"]
                                     if in_band or dep is None
                                     else dep.resource_class),
                  "retired": False}
        if dep is None:
            dep = models.Deployable(
                uuid=db_engine.new_uuid(), device_id=device.id,
                region_id=region["id"], num_accelerators=0,
                state=states.RegionState.READY,
                function_id=region.get("function_id"),
                reported_function_id=region.get("function_id"), **values)
            session.add(dep)
            session.flush()
            summary.add("deployables", "created")
            dep_changed = None
        else:
            dep_changed = _set(dep, values)
            function_changed, taken = _sync_function(session, dep, region)
            dep_changed = function_changed or dep_changed
            if taken:
                summary.functions_taken.append({
                    "rp_uuid": dep.rp_uuid, "function_id": dep.function_id,
                    "trait": inventory.function_trait(
                        tree.vendor_name(doc_device), dep.function_id)})
        count = _sync_handles(session, dep, region.get("attach_handles"),
                              summary)
        resized = _set(dep, {"num_accelerators": max(count, 1)})
        if dep_changed is not None:
            dep_changed = dep_changed or resized
        _sync_attributes(session, dep,
                         region.get("traits", []) if in_band else None,
                         summary)
        if dep_changed:
            summary.add("deployables", "updated")
        elif dep_changed is False:
            summary.add("deployables", "unchanged")
    for region_id, dep in deployables.items():
        if region_id not in seen:
            _retire_deployable(session, dep, summary)
    return device, changed


def _with_known_address(doc_device, existing):
    """The device with the address the database knows, or None."""
    if inventory.has_address(doc_device):
        return doc_device
    if existing is None:
        return None
    board = existing.std_board_info or {}
    return dict(doc_device, pci_address=existing.pci_address,
                vendor_id=(doc_device.get("vendor_id")
                           or board.get("vendor_id") or existing.vendor),
                product_id=(doc_device.get("product_id")
                            or board.get("product_id")))


def _apply(session, document):
    host = document["host"]
    summary = _Summary()
    devices = {d.source_id: d for d in session.execute(
        sa.select(models.Device).where(models.Device.hostname == host)
    ).scalars()}
    for doc_device in document["devices"]:
        existing = devices.get(doc_device["id"])
        known = _with_known_address(doc_device, existing)
        if known is None:
            LOG.warning("Host %s: device %s (%s) has no PCI address yet; "
                        "it is stored once the host agent finds it",
                        host, doc_device["id"], doc_device.get("redfish_uri"))
            summary.incomplete.append(doc_device["id"])
            continue
        doc_device = known
        _, changed = _sync_device(session, host, doc_device, existing,
                                  summary)
        if existing is not None:
            summary.add("devices", "updated" if changed else "unchanged")
    wanted = {d["id"] for d in document["devices"]}
    for source_id, device in devices.items():
        # NOTE(cyborg_lite): a device imported from Cyborg is in no
        # inventory document; it keeps Cyborg's provider and is not the
        # document's to remove (when the document lists it too, it is
        # adopted: cyborg_lite.cyborg_import.adopt).
        if source_id in wanted or source_id.startswith(
                cyborg_plan.PREFIX):
            continue
        deployables = session.execute(
            sa.select(models.Deployable).where(
                models.Deployable.device_id == device.id)).scalars().all()
        kept = [d for d in deployables
                if _retire_deployable(session, d, summary)]
        if kept:
            if not device.retired:
                device.retired = True
                summary.add("devices", "retired")
        else:
            session.flush()
            session.delete(device)
            summary.add("devices", "deleted")
    adopt.reserve_twin_handles(session, host)
    return summary.as_dict(host)


def apply_document(db, document):
    """Validate ``document`` and make the database match it, in one
    transaction.

    :param db: a :class:`cyborg_lite.db.engine.Database`.
    :param document: the decoded inventory document.
    :raises accel_common.exception.InvalidInventory: naming the bad field;
        nothing is changed.
    :returns: a summary: per kind (devices, deployables, attach_handles)
        the counts created/updated/unchanged/retired/deleted,
        ``functions_taken`` (the regions whose function the document
        changed, with their function trait, for Placement),
        ``incomplete`` (ids of devices without a PCI address, not stored),
        ``physnets_left`` (``{rp uuid: [trait]}``: the traits to take off
        regions' providers, for Placement: ``CUSTOM_<PHYSNET>`` of the
        physical networks a region's handles no longer name, and the
        ``traits`` a region no longer lists) and ``changed``.
    """
    inventory.validate(document)
    return db.run(_apply, document)
