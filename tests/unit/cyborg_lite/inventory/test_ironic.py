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

import json
import os
import types

from cyborg_lite.inventory import ironic as ironic_inventory

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..",
                       "etc", "cyborg_lite", "inventory.example.json")


def _doc(host):
    with open(EXAMPLE) as f:
        doc = json.load(f)
    doc["host"] = host
    return doc


def _node(node_uuid, document):
    extra = {"accelerators": document} if document is not None else {}
    # openstacksdk's Node exposes the uuid as ``id``.
    return types.SimpleNamespace(id=node_uuid, extra=extra)


def test_sync_applies_each_selected_document():
    applied = []

    class Baremetal:
        def nodes(self, fields):
            assert "extra" in fields
            return [_node("n1", _doc("h1")), _node("n2", None)]

    conn = types.SimpleNamespace(baremetal=Baremetal())
    result = ironic_inventory.sync(
        "db", conn, apply_document=lambda db, d: applied.append(d["host"])
        or {"host": d["host"]})
    assert applied == ["h1"]
    assert result == {"applied": [{"host": "h1"}], "skipped": {},
                      "not_in_placement": {}}
