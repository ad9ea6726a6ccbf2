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

import pytest

from cyborg_lite_dra import checkpoint


def test_records_survive_a_new_instance(tmp_path):
    first = checkpoint.Checkpoint(str(tmp_path))
    first.put("u1", {"state": checkpoint.BINDING, "arqs": {"a": {}}})
    first.put("u2", {"state": checkpoint.PREPARED})
    first.drop("u2")
    first.drop("never")

    again = checkpoint.Checkpoint(str(tmp_path))
    assert again.uids() == ["u1"]
    assert again.get("u1") == {"state": "binding", "arqs": {"a": {}}}
    assert again.get("u2") is None


def test_a_record_is_a_copy(tmp_path):
    records = checkpoint.Checkpoint(str(tmp_path))
    record = {"arqs": {}}
    records.put("u1", record)
    record["arqs"]["x"] = 1
    records.get("u1")["arqs"]["y"] = 2
    assert records.get("u1") == {"arqs": {}}


@pytest.mark.parametrize("content, message", [
    ("{not json", "cannot read the checkpoint"),
    (json.dumps({"version": 9, "claims": {}}), "version 9"),
    (json.dumps([1]), "version None"),
])
def test_an_unreadable_checkpoint_stops_the_plugin(tmp_path, content,
                                                   message):
    (tmp_path / checkpoint.FILE_NAME).write_text(content)
    with pytest.raises(checkpoint.CheckpointError, match=message):
        checkpoint.Checkpoint(str(tmp_path))
