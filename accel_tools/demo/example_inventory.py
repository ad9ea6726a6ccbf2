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

"""Where the example inventory is, which both walks start from.

``etc/cyborg_lite/inventory.example.json``: the standalone walk imports
it; the story gives it to the sim driver as the host's in-band view (its
PCI addresses are the BMC emulator's devices).
"""

import os
import sys

INVENTORY_NAME = os.path.join("etc", "cyborg_lite", "inventory.example.json")


def find():
    """The example inventory: next to the source tree, or where pip put
    the data files (``<prefix>/etc/cyborg_lite``)."""
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [os.path.join(os.path.dirname(os.path.dirname(here)),
                               INVENTORY_NAME),
                  os.path.join(sys.prefix, INVENTORY_NAME),
                  os.path.join(os.getcwd(), INVENTORY_NAME)]
    for path in candidates:
        if os.path.isfile(path):
            return path
    raise SystemExit("cannot find the example inventory; looked in: "
                     + ", ".join(candidates) + " (use --inventory FILE)")
