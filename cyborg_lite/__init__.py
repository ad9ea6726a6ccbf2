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

"""cyborg_lite: a slim Cyborg (the Cyborg v2 API Nova calls).

The API service (Flask, with its background work) over one database,
and one agent per compute host for the work only a host can do:

- :mod:`.api`: the REST API (its route table, handlers and schemas);
- :mod:`.binding` and :mod:`.arq_states`: binding accelerator requests,
  and the ARQ states with their transitions;
- :mod:`.states`: the named states of devices, regions and Nova events;
- :mod:`.scheduling`: where a boot's accelerator goes (routing, lock
  traits, sibling moves);
- :mod:`.programming`: loading functions into regions, pools, and the
  reconciler;
- :mod:`.inventory`: inventory documents into the database;
- :mod:`.db`: the models, migrations and each table's queries;
- :mod:`.agent`: the host agent and its drivers;
- :mod:`.notifier` (Nova's events), :mod:`.reclaim` (the ARQs of servers
  Nova no longer has), :mod:`.maintenance` (device enable/disable) and
  :mod:`.periodics` (the API process's background work);
- :mod:`.cyborg_import`: importing a Cyborg database;
- :mod:`.conf`, :mod:`.service`, :mod:`.wsgi`, :mod:`.cmd`: options,
  set-up and entry points; :mod:`.context`, :mod:`.policy` and
  :mod:`.policies`, :mod:`.metrics`, :mod:`.exception`,
  :mod:`.log_limits`.
"""

import warnings

# NOTE(cyborg_lite): cyborg_lite runs on native threads (its RPC server uses
# the "threading" executor). Keep the deprecation notice eventlet prints
# when a library merely probes for it (futurist does) out of operators'
# logs, and select oslo.service's threading backend before oslo.messaging
# imports it: nothing here runs on eventlet.
warnings.filterwarnings("ignore", message=r"\s*Eventlet is deprecated")

from oslo_service import backend as _oslo_service_backend  # noqa: E402

try:
    _oslo_service_backend.init_backend(
        _oslo_service_backend.BackendType.THREADING)
except _oslo_service_backend.exceptions.BackendAlreadySelected:
    pass  # a tool that loaded oslo.service first (config generators) chose
