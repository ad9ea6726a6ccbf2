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

"""Plan and apply an import inside one cyborg_lite transaction.

What cyborg_lite holds is read in the same transaction the rows are
inserted in, so the plan printed is the plan applied; a failure anywhere
rolls everything back and a rerun starts afresh.
"""

import sqlalchemy as sa

from cyborg_lite import states
from cyborg_lite.cyborg_import import adopt
from cyborg_lite.cyborg_import import plan as plan_mod
from cyborg_lite.db import models


def existing(session):
    """The :class:`~cyborg_lite.cyborg_import.plan.Existing` of the
    cyborg_lite database behind ``session``."""
    def column(*cols):
        return session.execute(sa.select(*cols)).all()

    found = plan_mod.Existing()
    for uuid, name, groups in column(models.DeviceProfile.uuid,
                                     models.DeviceProfile.name,
                                     models.DeviceProfile.groups):
        found.profiles[uuid] = (name, groups)
        found.profile_names[name] = uuid
    for uuid, host, address, source_id in column(
            models.Device.uuid, models.Device.hostname,
            models.Device.pci_address, models.Device.source_id):
        found.device_uuids.add(uuid)
        found.device_addresses[(host, address)] = source_id
    for uuid, rp_uuid in column(models.Deployable.uuid,
                                models.Deployable.rp_uuid):
        found.deployable_uuids.add(uuid)
        found.rp_uuids[rp_uuid] = uuid
    found.attribute_uuids = {u for u, in column(models.Attribute.uuid)}
    found.handle_uuids = {u for u, in column(models.AttachHandle.uuid)}
    for deployable, address, mdev_type, index in session.execute(
            sa.select(models.Deployable.uuid, models.AttachHandle.pci_address,
                      models.AttachHandle.mdev_type,
                      models.AttachHandle.mdev_index)
            .join(models.Deployable, models.Deployable.id ==
                  models.AttachHandle.deployable_id)
            .where(models.AttachHandle.mdev_type != "")).all():
        found.handle_instances[(deployable, address, mdev_type)].add(index)
    found.arq_uuids = {u for u, in column(models.ARQ.uuid)}
    for kind, uuid in column(models.CyborgImported.kind,
                             models.CyborgImported.uuid):
        found.imported[kind].add(uuid)
    return found


def _ids(session, model, uuids):
    uuids = {u for u in uuids if u is not None}
    if not uuids:
        return {}
    return dict(session.execute(
        sa.select(model.uuid, model.id).where(model.uuid.in_(uuids))).all())


def _insert(session, model, rows):
    objects = [model(**values) for values in rows]
    session.add_all(objects)
    session.flush()
    return {o.uuid: o.id for o in objects}


def _now_if_missing(values):
    if values.get("created_at") is None:
        values["created_at"] = models.utcnow()
    return values


def _insert_all(session, plan):
    now = models.utcnow()
    session.add_all(models.CyborgImported(kind=kind, uuid=values["uuid"],
                                          imported_at=now)
                    for kind, items in plan.rows.items() for values in items)
    rows = {kind: [_now_if_missing(dict(values)) for values in items]
            for kind, items in plan.rows.items()}
    profiles = _insert(session, models.DeviceProfile,
                       rows["device_profiles"])
    profiles.update(_ids(session, models.DeviceProfile,
                         [r["profile_uuid"]
                          for r in rows["accelerator_requests"]]))
    devices = _insert(session, models.Device, rows["devices"])
    devices.update(_ids(session, models.Device,
                        [r["device_uuid"] for r in rows["deployables"]]))
    for values in rows["deployables"]:
        values["device_id"] = devices[values.pop("device_uuid")]
        values.pop("parent_uuid")
        values.pop("root_uuid")
        values["state"] = states.RegionState.READY
    deployables = _insert(session, models.Deployable, rows["deployables"])
    deployables.update(_ids(session, models.Deployable, [
        r.get(key) for kind in ("attributes", "attach_handles",
                                "accelerator_requests")
        for r in rows[kind] for key in ("deployable_uuid",)]))
    # NOTE(import): parent and root are other deployables; set once all
    # are in, whatever their order.
    for values in plan.rows["deployables"]:
        session.execute(
            sa.update(models.Deployable)
            .where(models.Deployable.uuid == values["uuid"])
            .values(parent_id=deployables.get(values["parent_uuid"]),
                    root_id=deployables.get(values["root_uuid"])))
    for values in rows["attributes"]:
        values["deployable_id"] = deployables[values.pop("deployable_uuid")]
    _insert(session, models.Attribute, rows["attributes"])
    holders = {}
    for values in rows["attach_handles"]:
        values["deployable_id"] = deployables[values.pop("deployable_uuid")]
        holders[values["uuid"]] = values.pop("arq_uuid")
    handles = _insert(session, models.AttachHandle, rows["attach_handles"])
    for values in rows["accelerator_requests"]:
        values["device_profile_id"] = profiles[values.pop("profile_uuid")]
        values["deployable_id"] = deployables.get(
            values.pop("deployable_uuid"))
        values.pop("handle_uuid")
    arqs = _insert(session, models.ARQ, rows["accelerator_requests"])
    for handle_uuid, arq_uuid in holders.items():
        if arq_uuid is not None:
            session.execute(
                sa.update(models.AttachHandle)
                .where(models.AttachHandle.id == handles[handle_uuid])
                .values(arq_id=arqs[arq_uuid]))


def run(db, source, apply=False, free_orphan_handles=False):
    """Plan the import of ``source`` into ``db``; with ``apply`` (and no
    conflict refused) insert it, all in one transaction.

    :returns: the :class:`~cyborg_lite.cyborg_import.plan.Plan`.
    """
    def _run(session):
        plan = plan_mod.make(source, existing(session), free_orphan_handles)
        if apply and plan.can_apply and not plan.empty:
            _insert_all(session, plan)
            for host in sorted({d["hostname"]
                                for d in plan.rows["devices"]}):
                adopt.reserve_twin_handles(session, host)
        return plan

    return db.run(_run) if apply else db.read(_run)
