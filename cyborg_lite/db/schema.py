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

"""Is the database's schema the one this code needs?

Started against an empty database, or one a ``db sync`` has not reached
yet, the API answers 503 naming both revisions and the command to run,
background passes log one line and try again, and the agent (when it has a
database) refuses to start. Once the schema is current the answer is
cached, so a serving process pays one query only until then, and picks the
new schema up without a restart.
"""

import threading

from cyborg_lite.db import engine as db_engine
from cyborg_lite.db import migration

SYNC_COMMAND = "cyborg-lite-manage db sync"
_UNREAD = object()


def describe_problem(found, needed):
    """The message for a schema at ``found`` when the code needs
    ``needed``."""
    if found is None:
        where = "has no cyborg_lite schema (an empty database)"
    elif found in migration.known():
        where = f"is at schema revision {found}"
    else:
        where = (f"is at schema revision {found}, which this code does not "
                 f"know (was it synced by a newer cyborg_lite?)")
    return (f"The database {where}; this code needs revision {needed}. Run "
            f"'{SYNC_COMMAND}' with this service's configuration.")


class Guard:
    """Answers whether ``engine``'s schema is current, caching a yes."""

    def __init__(self, engine):
        self.engine = engine
        self.needed = migration.head()
        self._current = False
        self._lock = threading.Lock()

    @classmethod
    def from_conf(cls, conf):
        return cls(db_engine.Database.from_conf(conf).engine)

    def revision(self):
        """The database's revision now (None: no schema)."""
        return migration.current(self.engine)

    def problem(self, found=_UNREAD):
        """None when the schema is current, else the message saying what
        to do. Database errors propagate (the database is down).

        :param found: the revision, when the caller has just read it.
        """
        if self._current:
            return None
        if found is _UNREAD:
            found = self.revision()
        if found == self.needed:
            with self._lock:
                self._current = True
            return None
        return describe_problem(found, self.needed)
