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

"""Queries of the ``attach_handles`` table."""

import sqlalchemy as sa

from cyborg_lite.db import models

_H = models.AttachHandle
_FREE = (sa.select(_H.id)
         .where(_H.deployable_id == sa.bindparam("deployable"),
                _H.in_use.is_(False), _H.retired.is_(False))
         .order_by(_H.id)
         .limit(sa.bindparam("attempts", type_=sa.Integer)))
_TABLE = _H.__table__
_TAKE = (sa.update(_TABLE)
         .where(_TABLE.c.id == sa.bindparam("handle"),
                _TABLE.c.in_use.is_(False))
         .values(in_use=True, arq_id=sa.bindparam("arq"),
                 updated_at=sa.bindparam("now")))


#: one free handle taken in one statement (the lowest id, as in _FREE).
#: MySQL cannot name the updated table in a subquery; it has UPDATE ...
#: LIMIT instead, and hands the id back through LAST_INSERT_ID(id).
_TAKE_FIRST_MYSQL = sa.text(
    "UPDATE attach_handles SET in_use = 1, arq_id = :arq, "
    "updated_at = :now, id = LAST_INSERT_ID(id) "
    "WHERE deployable_id = :deployable AND in_use = 0 AND retired = 0 "
    "ORDER BY id LIMIT 1")


def take_first_pg(*conditions):
    """PostgreSQL: take the first free handle no other transaction holds
    (and that ``conditions`` allow); returns its id."""
    first_free = (
        sa.select(_TABLE.c.id)
        .where(_TABLE.c.deployable_id == sa.bindparam("deployable"),
               _TABLE.c.in_use.is_(False), _TABLE.c.retired.is_(False),
               *conditions)
        .order_by(_TABLE.c.id).limit(1)
        .with_for_update(skip_locked=True).scalar_subquery())
    return (sa.update(_TABLE)
            .where(_TABLE.c.id == first_free)
            .values(in_use=True, arq_id=sa.bindparam("arq"),
                    updated_at=sa.bindparam("now"))
            .returning(_TABLE.c.id))


_TAKE_FIRST_PG = take_first_pg()

def _take_first(session, deployable_id, arq_id):
    """Take the first free handle in one statement: ``(True, its id or
    None when none is free)``; ``(False, None)`` when not tried (sqlite),
    or when the free handles are all held by concurrent transactions on
    PostgreSQL (the caller then waits for them the slow way)."""
    dialect = session.get_bind().dialect.name
    if dialect not in ("mysql", "postgresql"):
        return False, None
    params = {"deployable": deployable_id, "arq": arq_id,
              "now": models.utcnow()}
    if dialect == "mysql":
        # NOTE(cyborg_lite): under READ COMMITTED, a row another
        # transaction holds is waited for and re-read: no SKIP LOCKED,
        # so finding none means none is free.
        result = session.execute(_TAKE_FIRST_MYSQL, params)
        return True, result.lastrowid if result.rowcount == 1 else None
    taken = session.execute(_TAKE_FIRST_PG, params).scalar_one_or_none()
    return taken is not None, taken


def take_free(session, deployable_id, arq_id, attempts=8):
    """Reserve one free attach handle of a deployable for an ARQ.

    On MySQL and PostgreSQL, one ``UPDATE`` takes the first free handle
    (the row locked, so two workers never take the same one). On sqlite,
    and on PostgreSQL when every free handle is held by a concurrent
    transaction (``SKIP LOCKED``), each try is one conditional ``UPDATE ...
    WHERE id = :id AND in_use = false`` on candidates read first: when two
    workers pick the same handle only one update matches, the other moves
    on to the next candidate.

    :returns: the id of the handle taken, or None when none is free.
    """
    tried, taken = _take_first(session, deployable_id, arq_id)
    if tried:
        return taken
    return take_candidate(session, deployable_id, arq_id, attempts)


def take_candidate(session, deployable_id, arq_id, attempts=8):
    """:func:`take_free` the slow way: a conditional ``UPDATE`` per
    candidate read first."""
    candidates = session.execute(
        _FREE, {"deployable": deployable_id, "attempts": attempts}
    ).scalars().all()
    for handle_id in candidates:
        result = session.execute(_TAKE, {
            "handle": handle_id, "arq": arq_id, "now": models.utcnow()})
        if result.rowcount == 1:
            return handle_id
    return None


def release(session, arq_ids):
    """Free the attach handles held by ``arq_ids``; returns how many."""
    if not arq_ids:
        return 0
    result = session.execute(
        sa.update(models.AttachHandle)
        .where(models.AttachHandle.arq_id.in_(arq_ids))
        .values(in_use=False, arq_id=None, updated_at=models.utcnow())
        .execution_options(synchronize_session=False))
    return result.rowcount


def without_physical_network(session, deployable, device):
    """PCI addresses of a NIC region's live PCI handles that name no
    physical network (what Nova needs to plug the port); ``[]`` for a
    region of any other device."""
    if device.type != "NIC":
        return []
    return session.execute(
        sa.select(_H.pci_address)
        .where(_H.deployable_id == deployable.id, _H.retired.is_(False),
               _H.type != "MDEV", _H.physical_network.is_(None))
        .order_by(_H.id)).scalars().all()


def in_use_by_deployable(session):
    """``{deployable id: attach handles in use}`` (only those with one)."""
    return dict(session.execute(
        sa.select(models.AttachHandle.deployable_id,
                  sa.func.count(models.AttachHandle.id))
        .where(models.AttachHandle.in_use.is_(True))
        .group_by(models.AttachHandle.deployable_id)).all())


def in_use_counts(session, deployable_ids):
    """``{deployable id: attach handles in use}`` of these deployables
    (only those with one)."""
    if not deployable_ids:
        return {}
    return dict(session.execute(
        sa.select(models.AttachHandle.deployable_id,
                  sa.func.count(models.AttachHandle.id))
        .where(models.AttachHandle.deployable_id.in_(deployable_ids),
               models.AttachHandle.in_use.is_(True))
        .group_by(models.AttachHandle.deployable_id)).all())


def free_count(session, deployable_id):
    """How many live attach handles of a deployable are free."""
    return session.execute(
        sa.select(sa.func.count(_H.id)).where(
            _H.deployable_id == deployable_id, _H.in_use.is_(False),
            _H.retired.is_(False))).scalar_one()


def in_use_count(session, deployable_ids):
    """How many attach handles of these deployables are held by ARQs."""
    return session.execute(
        sa.select(sa.func.count(models.AttachHandle.id)).where(
            models.AttachHandle.deployable_id.in_(deployable_ids),
            models.AttachHandle.in_use.is_(True))).scalar_one()
