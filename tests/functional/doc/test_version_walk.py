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

"""install/packages.rst's "The version", checked against what pbr prints
(``setup.py --version``, what ``pip wheel .`` builds) in clones of this
checkout with and without the release tag, after it, and without git."""

import configparser
import os
import subprocess
import sys

from tests.fixtures import venv
from tests.unit.doc import blocks

PAGE = blocks.DOCS / "install" / "packages.rst"
_GIT = ["git", "-c", "user.name=walk", "-c", "user.email=walk@example.org"]


def _version(tree, **env):
    proc = subprocess.run(
        [sys.executable, "setup.py", "-q", "--version"], cwd=tree,
        capture_output=True, text=True, timeout=300,
        env=dict(os.environ, **env))
    return proc.returncode, proc.stdout.strip().splitlines()[-1:], \
        " ".join(proc.stderr.split())


def _target(tree):
    cfg = configparser.ConfigParser()
    cfg.read(tree / "setup.cfg")
    return cfg["metadata"]["version"]


def _said(text):
    return text in " ".join(PAGE.read_text().split())


def test_the_page_says_what_pbr_builds(tmp_path):
    tree = venv.clone_checkout(tmp_path / "clone")
    target = _target(tree)
    commits = int(subprocess.run(
        ["git", "rev-list", "--count", "HEAD"], cwd=tree, check=True,
        capture_output=True, text=True).stdout)
    assert target == "1.0.0" and _said(f"names the release being prepared "
                                       f"(``{target}``)")

    untagged = _version(tree)
    subprocess.run(_GIT + ["tag", "-a", target, "-m", target], cwd=tree,
                   check=True)
    tagged = _version(tree)
    subprocess.run(_GIT + ["commit", "-q", "--allow-empty", "-m", "next"],
                   cwd=tree, check=True)
    after = _version(tree)

    # "a clone without that tag builds 1.0.0.devN, N counting the commits"
    assert untagged[0] == 0, untagged
    assert untagged[1][0].startswith(f"{target}.dev"), untagged
    assert 0 < int(untagged[1][0].rsplit("dev", 1)[1]) <= commits
    # "a checkout at the tag 1.0.0 builds 1.0.0"
    assert tagged[:2] == (0, [target]), tagged
    # "a commit after it builds nothing until version names the next one"
    assert after[0] != 0, after
    assert ("git history requires a target version of "
            "pbr.version.SemanticVersion(1.0.1), but target version is "
            "pbr.version.SemanticVersion(1.0.0)") in after[2], after
    assert _said("git history requires a target version of ... 1.0.1, but "
                 "target version is ... 1.0.0")


def test_a_tree_without_git_needs_pbr_version(tmp_path):
    clone = venv.clone_checkout(tmp_path / "clone")
    export = tmp_path / "export"
    export.mkdir()
    archive = subprocess.run(["git", "archive", "HEAD"], cwd=clone,
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(export)], input=archive,
                   check=True)

    bare = _version(export)
    given = _version(export, PBR_VERSION="1.2.3")

    assert bare[0] != 0, bare
    assert ("Versioning for this project requires either an sdist tarball, "
            "or access to an upstream git repository") in bare[2], bare
    assert _said("Versioning for this project requires either an sdist "
                 "tarball, or access to an upstream git repository")
    assert given[:2] == (0, ["1.2.3"]), given


def test_a_shallow_clone_builds_0_0_0(tmp_path):
    tree = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "1",
                    f"file://{blocks.ROOT}", str(tree)], check=True,
                   capture_output=True)

    assert _version(tree)[:2] == (0, ["0.0.0"])
    assert _said("a shallow clone (``--depth 1``) builds ``0.0.0``")
