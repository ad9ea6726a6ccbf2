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


"""The Cyborg v2-compatible REST API (Flask).

- :mod:`.app`: the application factory; :mod:`.middleware` the WSGI
  middleware around it, wired in one place; :mod:`.requestlog` one log line
  per request;
- :mod:`.routes`: every endpoint, in one table; :mod:`.handlers` one module
  per resource; :mod:`.schemas` their request bodies;
- :mod:`.microversion`: the microversions, declared once
  (``rest_api_version_history.rst`` their history);
- :mod:`.common`: what every handler uses; :mod:`.validation` what any
  database and schema can take;
- :mod:`.errors`: the one error handler (Cyborg's envelope);
- :mod:`.health`: ``GET /healthcheck``.
"""
