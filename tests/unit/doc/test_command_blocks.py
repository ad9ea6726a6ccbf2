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

"""Every command line of this project's console scripts that the docs show
is one their own argument parsers accept: no subcommand or option that does
not exist. (tests/functional/doc runs the ones that can run here.)"""

import argparse
import pathlib
import shlex
import subprocess

import pytest

from accel_tools.emulator import images as emulator_images
from accel_tools.emulator import main as emulator_main
from accel_tools.emulator import record_cli
from cyborg_lite.cmd import manage as cyborg_manage
from ironic_accel.cmd import manage as ironic_manage
from tests.unit.doc import blocks

#: options oslo.config adds to every command (with whether they take a value).
OSLO_OPTIONS = {"--config-file": True, "--config-dir": True,
                "--log-file": True, "--debug": False}


def _manage_parser(add_command_parsers):
    parser = argparse.ArgumentParser(exit_on_error=False)
    add_command_parsers(parser.add_subparsers(dest="command",
                                              required=True))
    return parser


def _service_parser():
    return argparse.ArgumentParser(exit_on_error=False)


PARSERS = {
    "cyborg-lite-manage": lambda: _manage_parser(
        cyborg_manage.add_command_parsers),
    "ironic-accel-manage": lambda: _manage_parser(
        ironic_manage.add_command_parsers),
    "cyborg-lite-api": _service_parser,
    "cyborg-lite-agent": _service_parser,
}


PROGRAMS = set(PARSERS) | {"ironic-accel-bmc-emulator"}


def _command_lines():
    found = []
    for block in blocks.all_blocks():
        if block.language not in ("", "console", "bash", "shell"):
            continue
        for line in block.text.replace("\\\n", " ").splitlines():
            plain = [word for word in line.split() if "=" not in word]
            if not plain or pathlib.PurePosixPath(plain[0]).name not in (
                    PROGRAMS):
                continue   # prose, output or another tool's command
            words = shlex.split(line, comments=True)
            while words and "=" in words[0] and not words[0].startswith("-"):
                words = words[1:]   # VAR=value before the command
            if words and pathlib.PurePosixPath(words[0]).name in PROGRAMS:
                found.append((block.where, words))
    return found


COMMANDS = _command_lines()


def _without_oslo_options(args):
    rest, index = [], 0
    while index < len(args):
        name = args[index].split("=", 1)[0]
        if name in OSLO_OPTIONS:
            takes_value = OSLO_OPTIONS[name] and "=" not in args[index]
            index += 2 if takes_value else 1
            continue
        rest.append(args[index])
        index += 1
    return rest


def test_command_lines_are_found():
    programs = {pathlib.PurePosixPath(words[0]).name
                for _, words in COMMANDS}
    assert {"cyborg-lite-manage", "ironic-accel-manage", "cyborg-lite-api",
            "cyborg-lite-agent"} <= programs


@pytest.mark.parametrize("where,words", COMMANDS,
                         ids=[f"{where}:{' '.join(words[:4])}"
                              for where, words in COMMANDS])
def test_command_line_is_accepted_by_its_parser(where, words):
    program = pathlib.PurePosixPath(words[0]).name
    args = _without_oslo_options(words[1:])
    if program == "ironic-accel-bmc-emulator":
        if args and args[0] in record_cli.COMMANDS:
            record_cli.parse_args(args)
        else:
            emulator_main.parse_args(args)
        return
    try:
        PARSERS[program]().parse_args(args)
    except (argparse.ArgumentError, SystemExit) as error:
        raise AssertionError(f"{where}: {' '.join(words)}: {error}")


def test_emulator_image_the_steps_page_writes_is_one_the_emulator_takes(
        tmp_path):
    """ironic-steps.rst's printf line writes an image the BMC emulator
    accepts (run as the page shows it)."""
    line = next(
        line for block in blocks.blocks(
            blocks.DOCS / "reference" / "ironic-steps.rst")
        for line in block.text.splitlines() if line.startswith("printf "))
    proc = subprocess.run(["bash", "-c", line], cwd=tmp_path, check=True,
                          capture_output=True, text=True)
    assert proc.returncode == 0
    image = tmp_path / "fpga-2.1.0.img"

    assert emulator_images.parse(image.read_bytes()) == {
        "kind": "firmware", "device_type": "FPGA", "version": "2.1.0",
        "function_id": None}
