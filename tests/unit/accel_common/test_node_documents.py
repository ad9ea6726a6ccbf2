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

import copy
import json
import os
import types

from accel_common import node_documents

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "..",
                       "etc", "cyborg_lite", "inventory.example.json")


def example_document(host):
    """The example inventory document, for ``host``."""
    with open(EXAMPLE) as f:
        doc = json.load(f)
    doc["host"] = host
    return doc


def node(node_uuid, document):
    """A node as openstacksdk lists it, carrying ``document``."""
    extra = {"accelerators": document} if document is not None else {}
    # openstacksdk's Node exposes the uuid as ``id``.
    return types.SimpleNamespace(id=node_uuid, extra=extra)


def test_nodes_without_documents_are_ignored():
    selection = node_documents.select_documents(
        [node("n1", None), node("n2", example_document("h2"))])
    assert [d["host"] for d in selection.documents] == ["h2"]
    assert selection.skipped == {}


def test_invalid_document_is_skipped_with_reason():
    bad = example_document("h1")
    del bad["devices"][0]["pci_address"]
    selection = node_documents.select_documents([node("n1", bad)])
    assert selection.documents == []
    assert "invalid document" in selection.skipped["n1"]
    assert "pci_address" in selection.skipped["n1"]


def test_host_filter():
    nodes = [node("n1", example_document("h1")),
             node("n2", example_document("h2"))]
    selection = node_documents.select_documents(nodes, host="h2")
    assert [d["host"] for d in selection.documents] == ["h2"]


def test_host_claimed_twice_is_skipped_for_both():
    other = copy.deepcopy(example_document("h1"))
    nodes = [node("n1", example_document("h1")), node("n2", other),
             node("n3", example_document("h3"))]
    selection = node_documents.select_documents(nodes)
    assert [d["host"] for d in selection.documents] == ["h3"]
    assert set(selection.skipped) == {"n1", "n2"}
    assert "claimed by several nodes" in selection.skipped["n1"]


def test_dict_nodes_are_accepted():
    selection = node_documents.select_documents(
        [{"uuid": "n1", "extra": {"accelerators": example_document("h1")}}])
    assert len(selection.documents) == 1
