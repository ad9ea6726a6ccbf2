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

"""The code blocks of doc/source, as a reader sees them.

A block is either a ``.. code-block:: LANG`` directive (with its
``:caption:``, which names the file a configuration block is) or a literal
block after ``::``.
"""

import dataclasses
import pathlib
import re
import textwrap

ROOT = pathlib.Path(__file__).resolve().parents[3]
DOCS = ROOT / "doc" / "source"

_DIRECTIVE = re.compile(r"^(\s*)\.\. code-block::\s*(\S+)\s*$")
_OPTION = re.compile(r"^\s*:(\w+):\s*(.*)$")
#: a line that opens an ini section: what makes a block a configuration.
SECTION = re.compile(r"^\[[A-Za-z_][\w.-]*\]\s*$", re.M)


@dataclasses.dataclass
class Block:
    """One code block: where it is, its language and caption, its text."""

    path: pathlib.Path
    line: int
    language: str
    caption: str
    text: str

    @property
    def where(self):
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def _indent(line):
    return len(line) - len(line.lstrip())


def _body(lines, start, parent_indent):
    """The indented lines from ``start`` on, deeper than ``parent_indent``,
    dedented; and the index after them."""
    index = start
    while index < len(lines) and not lines[index].strip():
        index += 1
    body = []
    while index < len(lines) and (
            not lines[index].strip()
            or _indent(lines[index]) > parent_indent):
        body.append(lines[index])
        index += 1
    return textwrap.dedent("\n".join(body)).strip("\n") + "\n", index


def blocks(path):
    """Every code block of one ``.rst`` file."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found = []
    index = 0
    while index < len(lines):
        line = lines[index]
        directive = _DIRECTIVE.match(line)
        if directive:
            indent, options, start = len(directive.group(1)), {}, index + 1
            index += 1
            while index < len(lines) and _OPTION.match(lines[index]):
                key, value = _OPTION.match(lines[index]).groups()
                options[key] = value
                index += 1
            text, index = _body(lines, index, indent)
            found.append(Block(path, start, directive.group(2),
                               options.get("caption", ""), text))
            continue
        if line.rstrip().endswith("::") and not line.lstrip().startswith(
                ".."):
            text, end = _body(lines, index + 1, _indent(line))
            if text.strip():
                found.append(Block(path, index + 2, "", "", text))
            index = end
            continue
        index += 1
    return found


def all_blocks():
    """Every code block of every page."""
    return [block for path in sorted(DOCS.rglob("*.rst"))
            for block in blocks(path)]
