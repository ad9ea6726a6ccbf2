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

"""The count of a programming run's starts by the reconciler
(``deployables.relaunches``, set to 0 when a run begins).

A run whose API process died before the agent was asked to program (or
whose answer was lost) leaves its region in ``programming`` with a stale
lease; the reconciler that takes it over starts it again
(:func:`cyborg_lite.programming.reconciler.settle_stale`). The count keeps
a run whose process keeps dying from being started for ever.
"""

import sqlalchemy as sa

from cyborg_lite import states
from cyborg_lite.db import models

_D = models.Deployable


def count(session, deployable_id, owner, limit):
    """Count one more start of the run ``owner`` took over on a region,
    unless it was started ``limit`` times already.

    :returns: True when it may be started again (and was counted).
    """
    return session.execute(
        sa.update(_D).where(_D.id == deployable_id,
                            _D.state == states.RegionState.PROGRAMMING,
                            _D.programming_owner == owner,
                            _D.relaunches < limit)
        .values(relaunches=_D.relaunches + 1)
        .execution_options(synchronize_session=False)).rowcount == 1
