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

"""Placement reporting of accelerator providers (doc/source/architecture.rst,
"Who owns what in Placement").

- :mod:`.reporter`: a node's providers from the desired tree, written with
  generation checks; :func:`report_after_refresh` runs after every
  inventory refresh, :func:`report_nodes` from the conductor periodic;
  both are no-ops when ``[placement]`` is not configured;
- :mod:`.periodic`: that conductor periodic;
- :mod:`.migrate_flat`: moving a host from the legacy flat model to nested
  providers (``ironic-accel-manage placement migrate-flat``).
"""

from ironic_accel.placement.reporter import report  # noqa: F401
from ironic_accel.placement.reporter import report_after_refresh  # noqa: F401
from ironic_accel.placement.reporter import report_nodes  # noqa: F401
