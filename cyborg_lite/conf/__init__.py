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

"""cyborg_lite configuration: one module per option group (or family).

:mod:`.api`, :mod:`.database`, :mod:`.agent` (with ``[pci]``),
:mod:`.programming`, :mod:`.scheduling`, :mod:`.pools`, :mod:`.inventory`,
:mod:`.nova`, :mod:`.clients` (``[placement]``, ``[ironic]``, ``[glance]``)
and :mod:`.metrics`; :mod:`.opts` is the entry point of
oslo-config-generator.
"""

from cyborg_lite.conf import agent
from cyborg_lite.conf import api
from cyborg_lite.conf import clients
from cyborg_lite.conf import database
from cyborg_lite.conf import inventory
from cyborg_lite.conf import metrics
from cyborg_lite.conf import nova
from cyborg_lite.conf import pools
from cyborg_lite.conf import programming
from cyborg_lite.conf import scheduling

# NOTE(cyborg_lite): every module listed here has register_opts(conf) and
# list_opts().
_MODULES = [api, database, agent, programming, scheduling, pools, inventory,
            nova, clients, metrics]


def register_opts(conf):
    """Register every cyborg_lite option on ``conf``."""
    for module in _MODULES:
        module.register_opts(conf)


def list_opts():
    """(group, options) pairs for oslo-config-generator."""
    pairs = []
    for module in _MODULES:
        pairs.extend(module.list_opts())
    return pairs
