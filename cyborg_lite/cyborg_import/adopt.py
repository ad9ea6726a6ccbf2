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

"""Move devices imported from Cyborg onto the inventory's own regions.

A device imported from Cyborg keeps Cyborg's provider. When an Ironic
inventory document lists the same device (same host, same PCI address),
both sides would offer it: Cyborg's provider and the reporter's region
provider, and cyborg_lite would hold two rows for one card (the *twin*).
Adoption makes the document's region the only owner:

1. **Placement**, one ``POST /reshaper`` per host: the inventory of
   Cyborg's providers goes to nothing and every consumer's allocation on
   them moves to the twin region's provider, atomically (no instance is
   touched, no allocation lost or doubled); then Cyborg's empty providers
   are deleted.
2. **Database**, one transaction: each of Cyborg's handles in use is
   paired with a twin handle at the same PCI address (and mdev type) that
   no other ARQ holds, which takes its uuid and its Bound ARQ (a vGPU's
   handle uuid names the mdev Nova created for it); the ARQs point at the
   twin region and its provider, and the imported device, deployables,
   attributes and handles are deleted (the import ledger keeps a rerun
   from bringing them back). The twin's other handles stay free, with
   their own uuids.

Each step checks what is there first, so a run cut off halfway finishes on
the next one: by ``cyborg import --apply`` run again, or by the inventory
sync, which adopts after every pass. Until a device is adopted as many of
its twin's handles at each address (and mdev type) as Cyborg has in use
there are kept in use (:func:`reserve_twin_handles`), so a bind never
hands out a function or vGPU instance an instance already has.
"""

import collections
import dataclasses

import sqlalchemy as sa

from accel_common import exception as common_exception
from cyborg_lite.cyborg_import import plan as plan_mod
from cyborg_lite.db import models


@dataclasses.dataclass
class Pair:
    """One imported deployable and the twin region it moves to."""

    imported: models.Deployable
    twin: models.Deployable
    #: ``[(imported handle, twin handle)]`` for the imported handles held
    #: by an ARQ or kept in use; the twin handle takes the imported one's
    #: uuid and ARQ.
    held: list = dataclasses.field(default_factory=list)
    #: twin handles other ARQs hold, where too few are left to pair.
    taken: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Adoption:
    """One imported device and the twin the inventory has of it."""

    device: models.Device
    twin: models.Device
    pairs: list = dataclasses.field(default_factory=list)

    @property
    def what(self):
        return (f"device {self.device.uuid} at {self.device.pci_address} "
                f"on {self.device.hostname}")


def _imported(column):
    return column.like(plan_mod.PREFIX + "%")


def _twins(session, host=None):
    """``[(imported device, twin device)]``, hosts sorted."""
    imported = sa.orm.aliased(models.Device)
    twin = sa.orm.aliased(models.Device)
    stmt = (sa.select(imported, twin)
            .join(twin, sa.and_(twin.hostname == imported.hostname,
                                twin.pci_address == imported.pci_address))
            .where(_imported(imported.source_id),
                   ~_imported(twin.source_id),
                   twin.retired.is_(False))
            .order_by(imported.hostname, imported.id))
    if host is not None:
        stmt = stmt.where(imported.hostname == host)
    return session.execute(stmt).all()


def _deployables(session, device):
    return session.execute(
        sa.select(models.Deployable)
        .where(models.Deployable.device_id == device.id,
               models.Deployable.retired.is_(False))
        .order_by(models.Deployable.id)).scalars().all()


def _handles(session, deployables):
    if not deployables:
        return []
    return session.execute(
        sa.select(models.AttachHandle)
        .where(models.AttachHandle.deployable_id.in_(
            [d.id for d in deployables]))
        .order_by(models.AttachHandle.id)).scalars().all()


def _key(handle):
    return handle.pci_address, handle.mdev_type


def _spare(handles):
    """Of one key's twin handles, those no ARQ holds (and not retired), in
    the order they are reserved and paired: reserved ones first, then by
    instance."""
    return sorted((h for h in handles
                   if h.arq_id is None and not h.retired),
                  key=lambda h: (not h.in_use, h.mdev_index, h.id))


def _by_key(handles):
    result = collections.defaultdict(list)
    for handle in handles:
        result[_key(handle)].append(handle)
    return result


def _match(pair, held, twin_handles):
    """Pair each of ``held`` (imported handles in use) with a spare twin
    handle of its key; where too few are spare, the twin handles other
    ARQs hold fill ``pair.taken``.

    :returns: ``["<address> <type>: <spare> of <needed>"]`` where too few
        are spare.
    """
    short = []
    for key, handles in sorted(_by_key(held).items()):
        spare = _spare(twin_handles[key])
        handles = sorted(handles, key=lambda h: (h.mdev_index, h.id))
        if len(spare) < len(handles):
            pair.taken.extend(h for h in twin_handles[key]
                              if h.arq_id is not None)
            short.append(f"{' '.join(key).rstrip()}: {len(spare)} of "
                         f"{len(handles)}")
            continue
        pair.held.extend(zip(handles, spare))
    return short


def _pair(session, adoption, lines):
    """Fill ``adoption.pairs``; False (with a line) when it cannot be."""
    imported = _deployables(session, adoption.device)
    twins = _deployables(session, adoption.twin)
    twin_handles = {t.id: _by_key(_handles(session, [t])) for t in twins}
    for deployable in imported:
        held = [h for h in _handles(session, [deployable]) if h.in_use]
        # NOTE(cyborg_lite): a twin region fits when it has a handle at
        # every address Cyborg's ARQs hold; with one region it must.
        fits = [t for t in twins
                if all(_key(h) in twin_handles[t.id] for h in held)]
        if len(twins) == 1 and not fits:
            missing = sorted({f"{h.pci_address} {h.mdev_type}".rstrip()
                              for h in held
                              if _key(h) not in twin_handles[twins[0].id]})
            lines.append(f"{adoption.what}: its twin region "
                         f"{twins[0].rp_uuid} has no attach handle at "
                         f"{', '.join(missing)}, which Cyborg's ARQs hold; "
                         "kept under Cyborg's provider "
                         f"{deployable.rp_uuid}")
            return False
        if len(fits) != 1:
            lines.append(f"{adoption.what}: cannot tell which of its "
                         f"{len(twins)} inventory regions Cyborg's "
                         f"deployable {deployable.name} is; kept under "
                         f"Cyborg's provider {deployable.rp_uuid}")
            return False
        pair = Pair(deployable, fits[0])
        short = _match(pair, held, twin_handles[fits[0].id])
        if short and not pair.taken:
            lines.append(f"{adoption.what}: its twin region "
                         f"{fits[0].rp_uuid} has too few attach handles "
                         "for the ones Cyborg's ARQs hold (spare of held: "
                         f"{', '.join(short)}); kept under Cyborg's "
                         f"provider {deployable.rp_uuid}")
            return False
        adoption.pairs.append(pair)
    return bool(adoption.pairs)


def _taken_twins(session, adoption):
    """Twin handles other ARQs hold where Cyborg's in-use handles find too
    few spare ones: ``[(twin handle, holder arq id)]``."""
    return [(twin, twin.arq_id) for pair in adoption.pairs
            for twin in pair.taken]


def pending(session, host=None, twins=None):
    """The adoptions to do (``[Adoption]``) and lines for the imported
    devices with a twin that cannot be adopted (and why).

    :param twins: ``_twins(session, host)``, when the caller has read it.
    """
    adoptions, lines = [], []
    if twins is None:
        twins = _twins(session, host)
    for device, twin in twins:
        adoption = Adoption(device, twin)
        if not _pair(session, adoption, lines):
            continue
        taken = _taken_twins(session, adoption)
        if taken:
            lines.append(
                f"{adoption.what}: its twin handles "
                f"{', '.join(h.uuid for h, _ in taken)} are held by other "
                "ARQs; kept under Cyborg's provider until they are free")
            continue
        adoptions.append(adoption)
    return adoptions, lines


def reserve_twin_handles(session, host):
    """Keep in use as many of the twin's handles of each address and mdev
    type as the imported device has in use (and free the others no ARQ
    holds), for ``host``.

    Until an imported device is adopted, its twin lists the same functions
    (and vGPU instances) as free; a bind taking one would hand an instance
    a function another instance has. A reserved handle is in use with no
    ARQ; adoption pairs Cyborg's in-use handles with these.
    """
    for device, twin in _twins(session, host):
        in_use = collections.Counter(_key(h) for h in _handles(
            session, _deployables(session, device)) if h.in_use)
        for key, handles in _by_key(_handles(
                session, _deployables(session, twin))).items():
            for rank, handle in enumerate(_spare(handles)):
                if handle.in_use != (rank < in_use[key]):
                    handle.in_use = rank < in_use[key]


# Placement

@dataclasses.dataclass(frozen=True)
class _Move:
    source: str
    source_rc: str
    target: str
    target_rc: str


class _NotYet(Exception):
    """Placement cannot take the move now; the message says why."""


def _free(client, rp_uuid, rc):
    _, inventories = client.inventories(rp_uuid)
    record = inventories.get(rc)
    if record is None:
        return 0
    capacity = int((record["total"] - record.get("reserved", 0))
                   * record.get("allocation_ratio", 1.0))
    return capacity - client.usages(rp_uuid).get(rc, 0)


def _reshape_body(client, host, moves):
    """The reshaper body carrying out ``moves``; None when Cyborg's
    providers are gone already (moved on an earlier run).

    :raises _NotYet: the target is not in Placement, or too small.
    """
    inventories, consumers, wanted = {}, {}, collections.Counter()
    for move in moves:
        source = client.provider(move.source)
        if source is None:
            continue
        if client.provider(move.target) is None:
            raise _NotYet(
                f"{host}: the inventory's provider {move.target} is not in "
                "Placement yet (the Ironic reporter has not reported it); "
                f"Cyborg's provider {move.source} is kept until it is")
        inventories[move.source] = {
            "resource_provider_generation": source["generation"],
            "inventories": {}}
        for consumer in client.allocations(move.source):
            consumers[consumer] = None
    if not inventories:
        return None
    allocations = {}
    for consumer in consumers:
        body = client.request("GET", f"/allocations/{consumer}")
        after = {rp: dict(a["resources"])
                 for rp, a in body["allocations"].items()}
        for move in moves:
            amount = after.pop(move.source, {}).get(move.source_rc, 0)
            if amount:
                slot = after.setdefault(move.target, {})
                slot[move.target_rc] = slot.get(move.target_rc, 0) + amount
                wanted[(move.target, move.target_rc)] += amount
        allocations[consumer] = {
            "allocations": {rp: {"resources": r} for rp, r in after.items()},
            "project_id": body["project_id"], "user_id": body["user_id"],
            "consumer_generation": body["consumer_generation"],
            "consumer_type": body.get("consumer_type") or "INSTANCE"}
    for (target, rc), amount in sorted(wanted.items()):
        free = _free(client, target, rc)
        if free < amount:
            raise _NotYet(
                f"{host}: the inventory's provider {target} has {free} {rc} "
                f"free but Cyborg's instances hold {amount}; nothing moved")
    return {"inventories": inventories, "allocations": allocations}


def _move_in_placement(client, host, moves):
    """One reshaper call for the host, then Cyborg's empty providers are
    deleted; returns lines.

    :raises _NotYet: nothing was changed.
    """
    lines = [f"{host}: allocations of {m.source_rc} on {m.source} become "
             f"{m.target_rc} on {m.target}, the inventory's class"
             for m in moves if m.source_rc != m.target_rc]
    body = _reshape_body(client, host, moves)
    if body is not None:
        for move in moves:
            client.ensure_resource_class(move.target_rc)
        client.request("POST", "/reshaper", ok=(204,), json=body)
        lines.append(f"{host}: moved the allocations of "
                     f"{len(body['allocations'])} consumer(s) off "
                     f"{len(body['inventories'])} Cyborg provider(s) onto "
                     "the inventory's, in one reshaper call")
    for move in moves:
        try:
            client.delete_provider(move.source)
            lines.append(f"{host}: deleted Cyborg's provider {move.source}")
        except common_exception.PlacementError as error:
            if error.status != 404:
                raise
    return lines


# Database

def _merge(session, adoption):
    """Point the ARQs at the twin and delete the imported rows; each twin
    handle paired with one of Cyborg's in use takes its uuid and ARQ."""
    for pair in adoption.pairs:
        imported, twin = pair.imported, pair.twin
        kept = {t.id: (h.uuid, h.arq_id) for h, t in pair.held}
        # NOTE(cyborg_lite): uuid and arq_id are unique: the imported
        # handles go before the twins take theirs. A kept uuid is the
        # name of the mdev Nova made for a bound vGPU.
        for handle in _handles(session, [imported]):
            session.delete(handle)
        session.flush()
        for handle in _handles(session, [twin]):
            if handle.arq_id is not None:
                continue
            if handle.id in kept:
                handle.uuid, handle.arq_id = kept[handle.id]
                handle.in_use = True
            else:
                handle.in_use = False
        session.execute(
            sa.update(models.ARQ)
            .where(models.ARQ.deployable_id == imported.id)
            .values(deployable_id=twin.id))
        session.execute(
            sa.update(models.ARQ)
            .where(models.ARQ.device_rp_uuid == imported.rp_uuid)
            .values(device_rp_uuid=twin.rp_uuid))
        session.execute(sa.delete(models.Attribute).where(
            models.Attribute.deployable_id == imported.id))
        session.delete(imported)
    session.flush()
    left = session.scalar(sa.select(sa.func.count(models.Deployable.id))
                          .where(models.Deployable.device_id ==
                                 adoption.device.id))
    if not left:
        session.delete(adoption.device)


def _survey(session, host):
    """``({host: (device uuids, [_Move])}, lines, hosts)`` of what to
    adopt; ``hosts``: every host with an imported device that has a
    twin."""
    twins = _twins(session, host)
    adoptions, lines = pending(session, host, twins)
    hosts = {device.hostname for device, _ in twins}
    by_host = {}
    for adoption in adoptions:
        devices, moves = by_host.setdefault(adoption.device.hostname,
                                            (set(), []))
        devices.add(adoption.device.uuid)
        moves.extend(_Move(p.imported.rp_uuid, p.imported.resource_class,
                           p.twin.rp_uuid, p.twin.resource_class)
                     for p in adoption.pairs)
    return by_host, lines, hosts


def _merge_host(session, host, devices):
    """Merge the adoptions of ``host`` moved in Placement (``devices``),
    read again in this transaction; returns lines."""
    devices = set(devices)
    adoptions, _ = pending(session, host)
    lines = []
    for adoption in adoptions:
        if adoption.device.uuid in devices:
            devices.discard(adoption.device.uuid)
            _merge(session, adoption)
            lines.append(f"{adoption.what}: adopted; its ARQs hold the "
                         "inventory region's handles")
    reserve_twin_handles(session, host)
    lines.extend(f"{host}: device {uuid_}: its allocations moved but the "
                 "database changed meanwhile; run again to finish"
                 for uuid_ in sorted(devices))
    return lines


def adopt(db, client, host=None):
    """Adopt every imported device that has a twin (on ``host``).

    :param db: a :class:`cyborg_lite.db.engine.Database`.
    :param client: an :class:`accel_common.placement.client.Client`.
    :returns: lines saying what was done and what was not, and why.
    :raises accel_common.exception.PlacementError: Placement refused a
        call (a consumer or provider that changed meanwhile answers 409:
        run again; the reshaper changed nothing then).
    """
    by_host, lines, hosts = db.read(_survey, host)
    for name, (devices, moves) in sorted(by_host.items()):
        try:
            lines.extend(_move_in_placement(client, name, moves))
        except _NotYet as reason:
            lines.append(str(reason))
            continue
        lines.extend(db.run(_merge_host, name, devices))
        hosts.discard(name)
    # NOTE(cyborg_lite): a device not adopted yet keeps its twin's handles
    # reserved as Cyborg's ARQs come and go, also when no document changed
    # (the sync then applies none).
    for name in sorted(hosts):
        db.run(reserve_twin_handles, name)
    return lines
