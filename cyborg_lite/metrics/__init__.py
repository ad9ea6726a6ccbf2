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

"""Prometheus metrics of the API, served at ``GET /metrics``.

Two kinds, because the API runs as several worker processes
(doc/source/admin/metrics.rst):

- :mod:`~cyborg_lite.metrics.state`: what the database says (regions and
  accelerator requests by state, the Nova events not delivered, the last
  periodic passes), counted at each scrape, so any worker answers the same;
- :mod:`~cyborg_lite.metrics.process`: what a process saw (bind and
  programming latencies, agent calls not answered, periodic passes that
  failed): histograms and counters, summed over the workers by
  prometheus-client's multiprocess mode when ``PROMETHEUS_MULTIPROC_DIR``
  is set;
- :mod:`~cyborg_lite.metrics.endpoint`: the WSGI middleware serving
  ``/metrics`` (who may scrape) and timing the binds.
"""
