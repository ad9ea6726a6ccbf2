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

"""A configuration typo stops every console script with one line naming
the file and the line, not a traceback."""

import pathlib
import subprocess
import sys

import pytest

from cyborg_lite import wsgi

BIN = pathlib.Path(sys.executable).parent

#: each console script with the arguments that make it read its files.
COMMANDS = [
    ("cyborg-lite-manage", ["db", "sync"]),
    ("cyborg-lite-api", []),
    ("cyborg-lite-agent", []),
    ("ironic-accel-manage", ["placement", "migrate-flat", "--host", "h"]),
]

#: an inline comment after a section header, as operators write it.
TYPO = "[DEFAULT]\ndebug = false\n\n[nova]   # where the events go\n"


@pytest.fixture
def bad_config(tmp_path):
    path = tmp_path / "typo.conf"
    path.write_text(TYPO)
    return path


@pytest.mark.parametrize("command,args", COMMANDS,
                         ids=[command for command, _ in COMMANDS])
def test_parse_error_is_one_line_naming_file_and_line(bad_config, command,
                                                      args):
    proc = subprocess.run(
        [str(BIN / command), "--config-file", str(bad_config)] + args,
        capture_output=True, text=True, timeout=120)

    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"{command}: ")
    assert f"{bad_config}:4" in lines[0]
    assert "Invalid section (must end with ])" in lines[0]


def test_wsgi_application_parse_error_is_one_line(bad_config, capsys):
    with pytest.raises(SystemExit) as raised:
        wsgi.init_application(["--config-file", str(bad_config)])

    assert raised.value.code == 2
    line = capsys.readouterr().err.strip()
    assert line.startswith("cyborg-lite-wsgi-api: ")
    assert f"{bad_config}:4" in line and "\n" not in line
