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

"""The demo's output helpers: what they keep and cut for the reader."""

import io

from accel_tools.demo import output


def test_shorten_puts_text_on_one_line_and_cuts_it():
    assert output.shorten("a\n  b\tc") == "a b c"
    assert output.shorten("x" * 20, limit=10) == "x" * 7 + "..."


def test_trim_drops_links_and_timestamps_at_every_level():
    data = [{"uuid": "u", "links": [], "created_at": "t",
             "nested": {"updated_at": "t", "state": "Bound"}}]
    assert output.trim(data) == [{"uuid": "u",
                                  "nested": {"state": "Bound"}}]


def test_indents_and_pci_address():
    assert output.indent("a\nb") == "    a\n    b"
    assert output.indent6("a") == "      a"
    assert output.bdf({"domain": "0000", "bus": "5e", "device": "00",
                       "function": "1"}) == "0000:5e:00.1"


def test_walk_times_each_step_and_lists_the_facts():
    out = io.StringIO()
    walk = output.Walk(out)
    with walk.step("only"):
        walk.detail("one\ntwo")
    walk.summary(["done"])
    text = out.getvalue()
    assert "== 1. only" in text
    assert "      one\n      two" in text
    assert "ok    1. only" in text
    assert "   - done" in text
