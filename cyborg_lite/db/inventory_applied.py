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

"""The fingerprint of the inventory document last applied, per host."""

import sqlalchemy as sa

from cyborg_lite.db import engine
from cyborg_lite.db import models

_A = models.InventoryApplied


@engine.reader
def known(session):
    """``{host: fingerprint}`` of every document applied so far."""
    return dict(session.execute(sa.select(_A.hostname, _A.fingerprint)).all())


@engine.transactional
def record(session, host, node_uuid, fingerprint):
    """Remember that ``host``'s document (of ``node_uuid``) with this
    fingerprint is applied."""
    row = session.get(_A, host)
    if row is None:
        session.add(_A(hostname=host, node_uuid=node_uuid,
                       fingerprint=fingerprint, applied_at=models.utcnow()))
    else:
        row.node_uuid, row.fingerprint = node_uuid, fingerprint
        row.applied_at = models.utcnow()


@engine.transactional
def forget_except(session, hosts):
    """Forget every host not in ``hosts`` (no document names it any
    more); returns how many. Writes nothing when there is none."""
    gone = set(session.scalars(sa.select(_A.hostname))) - set(hosts)
    if gone:
        session.execute(sa.delete(_A).where(_A.hostname.in_(gone)))
    return len(gone)
