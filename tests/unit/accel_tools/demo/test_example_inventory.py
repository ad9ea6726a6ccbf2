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

"""Where the demo finds the example inventory."""

import json
import sys

import pytest

from accel_tools.demo import example_inventory


def test_the_source_tree_has_the_example_inventory():
    path = example_inventory.find()
    assert path.endswith(example_inventory.INVENTORY_NAME)
    with open(path, encoding="utf-8") as handle:
        assert json.load(handle)["devices"]


def test_no_example_inventory_says_where_it_looked(monkeypatch, tmp_path):
    monkeypatch.setattr(example_inventory, "__file__",
                        str(tmp_path / "src" / "demo" / "here.py"))
    monkeypatch.setattr(sys, "prefix", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit, match="--inventory FILE"):
        example_inventory.find()
