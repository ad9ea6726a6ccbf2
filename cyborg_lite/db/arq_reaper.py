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

"""Queries that find and delete the ARQs Nova never learned of.

Nova creates a boot's ARQs and binds them moments later. When the answer
to a create is lost after the database committed it (the connection
dropped as the answer came back), Nova is answered 503 and creates the
ARQs again: the first ones stay ``Initial``, with no instance, and Nova
never deletes them (it never learned their uuids). An ARQ created with a
service token (``arqs.created_by_service``) that is still so long after
its create is one of those; an ARQ a user created without one never is
(a user may bind it whenever they like).
"""

import datetime

import sqlalchemy as sa

from cyborg_lite import arq_states
from cyborg_lite.db import models

_A = models.ARQ


def _unclaimed(max_age):
    cutoff = models.utcnow() - datetime.timedelta(seconds=max_age)
    return (_A.state == arq_states.INITIAL, _A.instance_uuid.is_(None),
            _A.created_by_service.is_(True), _A.created_at < cutoff)


def reap(session, max_age, limit):
    """Delete up to ``limit`` of the oldest ARQs created with a service
    token that are still ``Initial`` with no instance ``max_age``
    seconds after their create.

    A bind that commits first keeps its ARQ: the DELETE checks the state
    and the instance again.

    :returns: the uuids of the ARQs gone (one Nova deleted at the same
        moment counts too), and how many were looked at (``limit`` when
        more may be left).
    """
    unclaimed = _unclaimed(max_age)
    found = session.execute(
        sa.select(_A.id, _A.uuid).where(*unclaimed)
        .order_by(_A.id).limit(limit)).all()
    if not found:
        return [], 0
    ids = [arq_id for arq_id, _ in found]
    deleted = session.execute(
        sa.delete(_A).where(_A.id.in_(ids), *unclaimed[:3])
        .execution_options(synchronize_session=False)).rowcount
    kept = set()
    if deleted != len(ids):
        # NOTE(cyborg_lite): bound (or deleted) meanwhile: this
        # transaction sees its own DELETE, so what is left was kept.
        kept = set(session.execute(
            sa.select(_A.id).where(_A.id.in_(ids))).scalars())
    return [uuid for arq_id, uuid in found if arq_id not in kept], len(found)
