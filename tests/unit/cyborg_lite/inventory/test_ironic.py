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

import types

from cyborg_lite.inventory import ironic as ironic_inventory
from tests.unit.accel_common.test_node_documents import example_document
from tests.unit.accel_common.test_node_documents import node


def test_sync_applies_each_selected_document():
    applied = []

    class Baremetal:
        def nodes(self, fields):
            assert "extra" in fields
            return [node("n1", example_document("h1")), node("n2", None)]

    conn = types.SimpleNamespace(baremetal=Baremetal())
    result = ironic_inventory.sync(
        "db", conn, apply_document=lambda db, d: applied.append(d["host"])
        or {"host": d["host"]})
    assert applied == ["h1"]
    assert result == {"applied": [{"host": "h1"}], "skipped": {},
                      "not_in_placement": {}}
