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

import os
import socket

from accel_tools.embedded import common


def test_free_port_can_be_bound():
    port = common.free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


def test_child_env_imports_this_tree_and_bypasses_proxies(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    monkeypatch.setenv("no_proxy", "example.org")
    env = common.child_env(EXTRA="1")
    assert env["PYTHONPATH"].split(os.pathsep) == [common.SOURCE_ROOT,
                                                    "/elsewhere"]
    assert os.path.isdir(os.path.join(common.SOURCE_ROOT, "ironic_accel"))
    assert "127.0.0.1" in env["NO_PROXY"].split(",")
    assert "example.org" in env["no_proxy"].split(",")
    assert env["EXTRA"] == "1"


def test_log_tail_joins_the_last_lines_and_skips_missing_files(tmp_path):
    first = tmp_path / "a.log"
    first.write_text("".join(f"a{n}\n" for n in range(10)))
    second = tmp_path / "b.log"
    second.write_text("b0\nb1\n")
    tail = common.log_tail(first, tmp_path / "missing.log", second, lines=2)
    assert tail == "a8\na9\nb0\nb1\n"


def test_stopwatch_records_the_block_duration():
    timings = {}
    with common.Stopwatch(timings, "step"):
        pass
    assert 0 <= timings["step"] < 1
