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

import io

import pytest

from accel_tools.demo import main as demo
from accel_tools.demo import output


def test_failed_step_prints_the_component_log_and_stops_the_walk():
    out = io.StringIO()
    walk = output.Walk(out, logs={"ironic": lambda: "line 1\nconductor: boom",
                                  "bmc": lambda: ""})
    with walk.step("first"):
        walk.detail("fine")
    with pytest.raises(output.DemoFailed, match="step 2 .second. failed: "
                                                "node is clean failed"):
        with walk.step("second", ("ironic", "bmc")):
            raise output.DemoFailed("node is clean failed")
    walk.summary(["a fact"])
    text = out.getvalue()
    assert "== 2. second" in text
    assert "!! step 2 failed" in text
    assert "last lines of the ironic log" in text
    assert "conductor: boom" in text
    assert "bmc log" not in text
    assert "ok    1. first" in text
    assert "FAIL  2. second" in text
    assert "- a fact" in text


def test_state_dir_must_be_empty(tmp_path, capsys):
    (tmp_path / "old.sqlite").write_text("x")
    with pytest.raises(SystemExit) as info:
        demo.main(["--state-dir", str(tmp_path)])
    assert info.value.code == 2
    assert "is not empty" in capsys.readouterr().err
    assert (tmp_path / "old.sqlite").exists()
