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

"""Persistence: the models, their migrations, and each table's queries.

- :mod:`.engine`: the :class:`~.engine.Database` handle: oslo.db
  ``enginefacade`` contexts configured from ``[database]``, transactions
  retried on deadlocks; :mod:`.backends` what differs between sqlite,
  MariaDB/MySQL and PostgreSQL (connection setup, the SQLAlchemy engine
  plugin); :mod:`.errors` what a database error means (unreachable: 503,
  retryable); :mod:`.pagination` identifiers and list pages;
- :mod:`.models`: the SQLAlchemy models; :mod:`.migrations` the alembic
  revisions, run by :mod:`.migration` (``cyborg-lite-manage db sync``);
  :mod:`.schema` says whether the database is at the revision the code
  needs;
- one module of queries per table: :mod:`.arqs`, :mod:`.device_profiles`,
  :mod:`.devices`, :mod:`.deployables`, :mod:`.attach_handles`,
  :mod:`.attributes`, :mod:`.pools` (``function_pools``), :mod:`.leases`
  (``periodic_leases``), :mod:`.agent_contacts`,
  :mod:`.inventory_applied`; :mod:`.routing` the lookup routing's rows;
  :mod:`.arq_reaper` deletes the ``Initial`` ARQs Nova never learned of,
  :mod:`.relaunches` counts a programming run's restarts;
- the bind's writer lives here too: the domain layer decides, this layer
  writes;
- :mod:`.counts`: the read-only counts of the metrics endpoint;
  :mod:`.purge`: ``cyborg-lite-manage db purge``.
"""
