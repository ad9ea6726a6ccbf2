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

"""Function pools: "keep at least N idle regions programmed with F".

Pools come from ``[pools] policies`` (``FUNCTION:N[:RESOURCE_CLASS]``) and
from the ``function_pools`` table (``cyborg-lite-manage pools set``). The
reconciler calls :func:`fill`, which programs idle regions ahead of time so
the scheduler finds them by their function trait and binds need no
programming. It never touches a region with a handle in use (on a
``single`` device: any handle of the device), and it takes a region from
another pool only while that pool has more idle regions than it wants.

Each pool's row is locked (``SELECT ... FOR UPDATE``) while its deficit is
computed and regions are taken, so two API workers filling at once never
overshoot.
"""

import collections
import dataclasses

from oslo_db import exception as db_exc
from oslo_log import log as logging

from cyborg_lite import exception
from cyborg_lite import states
from cyborg_lite.db import attach_handles as handle_db
from cyborg_lite.db import deployables as deployable_db
from cyborg_lite.db import models
from cyborg_lite.db import pools as pool_db
from cyborg_lite.programming import exception as prog_exception
from cyborg_lite.scheduling import locks

LOG = logging.getLogger(__name__)

#: name prefix of the table rows mirroring ``[pools] policies``.
CONFIG_PREFIX = "config:"

#: device types whose regions can be loaded with a function.
PROGRAMMABLE_TYPES = ("FPGA",)


class InvalidPolicy(exception.Invalid):
    msg_fmt = "Invalid function pool %(entry)r: %(reason)s"


@dataclasses.dataclass(frozen=True)
class Pool:
    """One pool policy."""

    name: str
    function_id: str
    min_ready: int
    resource_class: str = None


def parse_policy(entry):
    """``FUNCTION:N[:RESOURCE_CLASS]`` -> :class:`Pool`.

    :raises InvalidPolicy: naming what is wrong.
    """
    parts = [p.strip() for p in str(entry).split(":")]
    if len(parts) not in (2, 3) or not parts[0]:
        raise InvalidPolicy(entry=entry,
                            reason="expected FUNCTION:N[:RESOURCE_CLASS]")
    try:
        count = int(parts[1])
    except ValueError:
        raise InvalidPolicy(entry=entry,
                            reason=f"N must be an integer, got {parts[1]!r}")
    if count < 0:
        raise InvalidPolicy(entry=entry, reason="N must not be negative")
    rc = parts[2] if len(parts) == 3 and parts[2] else None
    name = CONFIG_PREFIX + parts[0] + (f":{rc}" if rc else "")
    return Pool(name, parts[0], count, rc)


def config_pools(conf):
    """The pools of ``[pools] policies``."""
    return [parse_policy(entry) for entry in conf.pools.policies]


def _sync_config(db, conf):
    wanted = {p.name: p for p in config_pools(conf)}

    def _run(session):
        rows = {r.name: r for r in pool_db.get_all(session)}
        for name, row in rows.items():
            if name.startswith(CONFIG_PREFIX) and name not in wanted:
                session.delete(row)
        for name, pool in wanted.items():
            row = rows.get(name)
            if row is None:
                session.add(models.FunctionPool(
                    name=name, function_id=pool.function_id,
                    min_ready=pool.min_ready,
                    resource_class=pool.resource_class))
            elif row.min_ready != pool.min_ready:
                row.min_ready = pool.min_ready

    try:
        db.run(_run)
    except db_exc.DBDuplicateEntry:
        pass  # another worker inserted the same rows: they are there now


def load(db, conf=None):
    """Every pool (the table, after mirroring ``[pools]`` into it)."""
    if conf is not None:
        _sync_config(db, conf)
    return db.run(lambda s: [
        Pool(r.name, r.function_id, r.min_ready, r.resource_class)
        for r in pool_db.get_all(s)])


def set_pool(db, name, function_id, min_ready, resource_class=None):
    """Create or change a pool stored in the database."""
    if name.startswith(CONFIG_PREFIX):
        raise InvalidPolicy(entry=name, reason=f"names starting with "
                                               f"{CONFIG_PREFIX!r} are "
                                               f"reserved for [pools]")
    if min_ready < 0:
        raise InvalidPolicy(entry=name, reason="N must not be negative")

    def _run(session):
        row = pool_db.get(session, name)
        if row is None:
            row = models.FunctionPool(name=name)
            session.add(row)
        row.function_id = function_id
        row.min_ready = min_ready
        row.resource_class = resource_class
        return Pool(name, function_id, min_ready, resource_class)

    return db.run(_run)


def delete_pool(db, name):
    """Delete a pool stored in the database; True when it existed."""
    return db.run(pool_db.delete, name)


def _regions(session):
    """Live programmable regions with their device and use counts."""
    rows = deployable_db.with_devices_of_types(session, PROGRAMMABLE_TYPES)
    used = handle_db.in_use_by_deployable(session)
    device_used = collections.Counter()
    for deployable, device in rows:
        device_used[device.id] += used.get(deployable.id, 0)
    result = []
    for deployable, device in rows:
        busy = (device_used[device.id] if device.program_mode == "single"
                else used.get(deployable.id, 0))
        result.append((deployable, device, busy))
    return result


def _fits(pool, deployable):
    return (pool.resource_class is None
            or deployable.resource_class == pool.resource_class)


def _counts(pool, rows):
    counts = collections.Counter()
    for deployable, device, busy in rows:
        if not _fits(pool, deployable):
            continue
        if deployable.state == states.RegionState.PROGRAMMING:
            if deployable.target_function_id == pool.function_id:
                counts["programming"] += 1
        elif (deployable.state == states.RegionState.READY
              and deployable.function_id == pool.function_id):
            if busy:
                counts["in_use"] += 1
            elif device.status == states.DeviceStatus.ENABLED:
                counts["ready"] += 1
    return counts


def status(db, conf=None):
    """Desired vs ready per pool.

    :returns: a list of dicts: ``name, function_id, resource_class,
        desired, ready`` (idle, programmed, usable), ``in_use`` and
        ``programming``, ``missing``.
    """
    pools = load(db, conf)
    rows = db.run(_regions)
    result = []
    for pool in pools:
        counts = _counts(pool, rows)
        result.append({
            "name": pool.name, "function_id": pool.function_id,
            "resource_class": pool.resource_class,
            "desired": pool.min_ready, "ready": counts["ready"],
            "in_use": counts["in_use"],
            "programming": counts["programming"],
            "missing": max(0, pool.min_ready - counts["ready"]
                           - counts["programming"])})
    return result


def _fill_one(session, programmer, pool, pools, limit=1):
    locked = pool_db.lock(session, pool.name)
    if locked is None:
        return []
    rows = _regions(session)
    counts = _counts(pool, rows)
    deficit = min(limit, pool.min_ready - counts["ready"]
                  - counts["programming"])
    if deficit <= 0:
        return []
    spare = {}
    for other in pools:
        if other.function_id != pool.function_id:
            spare[other.function_id] = spare.get(other.function_id, 0) + (
                _counts(other, rows)["ready"] - other.min_ready)
    now = models.utcnow()
    candidates = [(d, dev) for d, dev, busy in rows
                  if not busy and d.state == states.RegionState.READY
                  and dev.status == states.DeviceStatus.ENABLED
                  and _fits(pool, d)
                  and d.function_id != pool.function_id
                  and locks.kept_for(d, now) in (
                      None, (pool.function_id, None))]
    # Empty regions first, then functions no pool wants, then spares.
    candidates.sort(key=lambda item: (item[0].function_id is not None,
                                      item[0].function_id in spare,
                                      item[0].id))
    jobs = []
    for deployable, device in candidates:
        if len(jobs) >= deficit:
            break
        running = deployable.function_id
        if running in spare:
            if spare[running] <= 0:
                continue
        try:
            with session.begin_nested():
                job = programmer.begin(session, deployable, device,
                                        pool.function_id, None,
                                        allowed=(states.RegionState.READY,))
        except prog_exception.ProgrammingConflict as error:
            LOG.debug("Pool %s skips %s: %s", pool.name, deployable.uuid,
                      error.message)
            continue
        if running in spare:
            spare[running] -= 1
        jobs.append(job)
    return jobs


def fill(programmer, wait=False):
    """Start programming idle regions for every pool short of its minimum.

    Pools take one region per turn, so when idle regions are scarce every
    pool gets its share instead of the first one taking them all.

    :param wait: wait for the runs to finish.
    :returns: ``{pool name: [deployable uuids started]}``.
    """
    pools = load(programmer.db, programmer.conf)
    started, running = {}, []
    progress = True
    while progress:
        progress = False
        for pool in pools:
            jobs = programmer.db.run(_fill_one, programmer, pool, pools)
            if not jobs:
                continue
            progress = True
            uuids = [r.uuid for job in jobs for r in job.regions]
            started.setdefault(pool.name, []).extend(uuids)
            LOG.info("Pool %s (%s x%d): programming %s", pool.name,
                     pool.function_id, pool.min_ready, uuids)
            running += programmer.launch(jobs)
    if wait:
        for future in running:
            future.result()
    return started
