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


def take_free(session, deployable_id, arq_id, attempts=8):
    """Reserve one free attach handle of a deployable for an ARQ.

    Each try is one conditional ``UPDATE ... WHERE id = :id AND in_use =
    false``: when two workers pick the same handle only one update matches,
    the other moves on to the next candidate.

    :returns: the id of the handle taken, or None when none is free.
    """
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
