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

"""``.. release-notes::``: the reno notes of ``releasenotes/notes``.

reno's own Sphinx extension reads the notes from the git history, which a
build from an export or a git worktree does not always have, and groups them
by release; nothing is released yet, so this one reads the files and shows
them by section, in reno's section order, as reno's "unreleased" page would.
"""

import pathlib

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective
import yaml

#: reno's default sections, in its order: (key, title).
SECTIONS = (
    ("features", "New Features"),
    ("issues", "Known Issues"),
    ("upgrade", "Upgrade Notes"),
    ("deprecations", "Deprecation Notes"),
    ("critical", "Critical Issues"),
    ("security", "Security Issues"),
    ("fixes", "Bug Fixes"),
    ("other", "Other Notes"),
)


class ReleaseNotes(SphinxDirective):
    """Renders every note file under ``notesdir`` (relative to the
    documentation source, default ``../../releasenotes/notes``)."""

    option_spec = {"notesdir": str}

    def run(self):
        source = pathlib.Path(self.env.srcdir)
        notes_dir = (source / self.options.get(
            "notesdir", "../../releasenotes/notes")).resolve()
        notes = []
        for path in sorted(notes_dir.glob("*.yaml")):
            self.env.note_dependency(str(path))
            notes.append(yaml.safe_load(path.read_text(encoding="utf-8"))
                         or {})
        lines = []
        for note in notes:
            if note.get("prelude"):
                lines += [*str(note["prelude"]).splitlines(), ""]
        for key, title in SECTIONS:
            items = [item for note in notes for item in note.get(key) or ()]
            if not items:
                continue
            lines += [title, "-" * len(title), ""]
            for item in items:
                body = str(item).strip().splitlines()
                lines += [f"* {body[0]}"]
                lines += [f"  {line}" if line else "" for line in body[1:]]
                lines += [""]
        container = nodes.section()
        container.document = self.state.document
        self.state.nested_parse(StringList(lines, source=str(notes_dir)),
                                self.content_offset, container,
                                match_titles=True)
        return container.children


def setup(app):
    app.add_directive("release-notes", ReleaseNotes)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
