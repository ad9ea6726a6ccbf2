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

"""tools/ensure-venv, which the README's commands source, copes with what
other tools leave behind."""

import hashlib
import pathlib
import shutil
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[2]
HASHED = ("requirements.txt", "test-requirements.txt", "constraints.txt",
          "setup.cfg")


def _checkout_copy(tmp_path):
    (tmp_path / "tools").mkdir()
    shutil.copy(ROOT / "tools" / "ensure-venv", tmp_path / "tools")
    for name in HASHED:
        shutil.copy(ROOT / name, tmp_path / name)
    digest = hashlib.sha1(b"".join(
        (tmp_path / name).read_bytes() for name in HASHED)).hexdigest()
    return f".installed-{digest[:12]}"


def _venv_chosen(tmp_path):
    proc = subprocess.run(
        ["bash", "-c", "set -eu; source tools/ensure-venv; echo \"$VENV\""],
        cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip(), proc.stderr


def test_a_venv_file_from_another_tool_is_kept_and_bypassed(tmp_path):
    stamp = _checkout_copy(tmp_path)
    (tmp_path / ".venv").write_text("/somewhere/.tox/docs\n")
    # A directory already built (its stamp current), so nothing installs.
    (tmp_path / ".venv-ironic-accel").mkdir()
    (tmp_path / ".venv-ironic-accel" / stamp).touch()

    chosen, stderr = _venv_chosen(tmp_path)

    assert chosen == ".venv-ironic-accel"
    assert ".venv is a file another tool wrote" in stderr
    assert (tmp_path / ".venv").read_text() == "/somewhere/.tox/docs\n"


def test_a_venv_directory_is_used_as_before(tmp_path):
    stamp = _checkout_copy(tmp_path)
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / stamp).touch()

    chosen, stderr = _venv_chosen(tmp_path)

    assert chosen == ".venv"
    assert stderr == ""
