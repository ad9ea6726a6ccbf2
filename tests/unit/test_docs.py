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

"""The documentation builds without a warning (what ``tox -e docs`` runs)."""

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_docs_build_with_warnings_as_errors(tmp_path):
    build = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b",
         "html", str(ROOT / "doc" / "source"), str(tmp_path)],
        capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert build.returncode == 0, build.stdout + build.stderr


def test_readme_points_inside_the_repository():
    readme = (ROOT / "README.rst").read_text(encoding="utf-8")
    assert "../shared" not in readme
