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

"""cyborg_lite: a slim Cyborg (the Cyborg v2 API Nova calls)."""

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
