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

"""What a bind, unbind or delete does once its transaction is committed,
as one value (:class:`Effects`) run in one place (:meth:`Effects.run`):
the lock traits of the regions it touched, the routed lookups it consumed
or gave up, and the programming runs it launches."""

import dataclasses

from oslo_log import log as logging

from cyborg_lite.scheduling import routing

LOG = logging.getLogger(__name__)


@dataclasses.dataclass
class Effects:
    """The after-commit work of one bind, unbind or delete."""

    #: ids of the regions whose lock traits are to be written.
    touched: set = dataclasses.field(default_factory=set)
    #: lock traits of the contents served (or asked for, when failed).
    served: list = dataclasses.field(default_factory=list)
    #: the routed lookups of ``served`` were consumed in the transaction
    #: (bound); False: consume one of each now (the bind failed).
    consumed: bool = True
    #: programming jobs to launch.
    jobs: list = dataclasses.field(default_factory=list)
    #: uuids of the ARQs bound (for the caller's answer and Nova events).
    bound: list = dataclasses.field(default_factory=list)

    def run(self, db, locks=None, programmer=None, defer=None):
        """Write the lock traits (after the answer when ``defer`` is
        given) and launch the programming runs.

        :param locks: a :class:`~cyborg_lite.scheduling.locks.LockTraits`
            (None: lock traits are not written).
        :param defer: called with the lock trait write, to run it once the
            answer is sent (None: written before returning).
        """
        if locks is not None and locks.enabled and (
                self.touched or self.served):
            if defer is None:
                self._sync_locks(db, locks)
            else:
                # NOTE(cyborg_lite): the scheduler reads the trait; the
                # bind itself is decided by the database. Writing it after
                # the answer keeps its Placement calls off Nova's boot path.
                defer(lambda: self._sync_locks(db, locks))
        if self.jobs and programmer is not None:
            programmer.launch(self.jobs)

    def _sync_locks(self, db, locks):
        """Consume one routed lookup of each content served (unless
        consumed already) and end the keeps of contents no lookup waits
        for any more (:mod:`cyborg_lite.scheduling.routing`), then write
        the lock traits of the regions touched or released."""
        released = []
        if self.served:
            try:
                released = (routing.release(db, self.served) if self.consumed
                            else routing.consume(db, self.served))
            except Exception as error:
                # NOTE(cyborg_lite): the lookup or keep then waits out its
                # lease.
                LOG.warning("Routed lookups of %s not consumed or their "
                            "regions not released: %s",
                            ", ".join(self.served), error)
        locks.sync(set(self.touched) | set(released))
