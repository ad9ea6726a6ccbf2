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

"""admin/security.rst's by-hand privsep setup, walked: the files it gives
written as it says (under a scratch directory, the virtualenv being this
one), then its last command, which starts the agent's privsep daemon
through oslo-rootwrap and the filter as the agent does.

What does not run here: sudo (this machine may lack it; the test runs as
root, so the page's ``sudo`` and ``sudo -u cyborg`` are dropped, and
test_agent_unprivileged.py covers sudo and the agent's own user) and
``visudo``, which runs when it is installed.
"""

import configparser
import json
import os
import pathlib
import shlex
import shutil
import subprocess
import sys

from oslo_rootwrap import filters as rootwrap_filters
from oslo_rootwrap import wrapper
import pytest

from tests.unit.doc import blocks

PAGE = blocks.DOCS / "admin" / "security.rst"
_SECTION = "Setting the privsep helper up by hand"
# The command the agent runs, built by oslo.privsep from the file.
_PROBE = (
    "import json, sys\n"
    "from oslo_config import cfg\n"
    "from cyborg_lite.agent import privsep\n"
    "conf = cfg.ConfigOpts()\n"
    "conf(['--config-file', sys.argv[1]])\n"
    "privsep.setup(conf)\n"
    "print(json.dumps(privsep.sys_admin_pctxt.helper_command(\n"
    "    '/tmp/tmpk2l9x0/privsep.sock')))\n")


def _section_blocks():
    text = PAGE.read_text()
    start = text.index(_SECTION)
    end = start + len(_SECTION)
    return [block for block in blocks.blocks(PAGE)
            if block.line > text.count("\n", 0, end)]


def _adapt(text, tmp_path):
    # NOTE(docs): the longest paths first: /etc/cyborg_lite is inside
    # others' names.
    for system_path, here in (("/opt/cyborg-lite", sys.prefix),
                              ("/etc/sudoers.d", str(tmp_path / "sudoers.d")),
                              ("/etc/cyborg_lite", str(tmp_path / "etc"))):
        text = text.replace(system_path, here)
    return text


@pytest.mark.skipif(os.geteuid() != 0,
                    reason="the privsep daemon takes capabilities: root")
def test_the_by_hand_privsep_setup_starts_the_agents_daemon(tmp_path):
    found = _section_blocks()
    files = [block for block in found if block.caption]
    assert [block.caption for block in files] == [
        "/etc/cyborg_lite/cyborg_lite.conf", "/etc/cyborg_lite/rootwrap.conf",
        "/etc/cyborg_lite/rootwrap.d/cyborg-lite-agent.filters",
        "/etc/sudoers.d/cyborg-lite-agent"]
    for block in files:
        path = pathlib.Path(_adapt(block.caption, tmp_path))
        path.parent.mkdir(parents=True, exist_ok=True)
        text = _adapt(block.text, tmp_path)
        if block.caption.endswith("cyborg_lite.conf"):
            # NOTE(docs): root needs no sudo, and this machine may lack it.
            assert "helper_command = sudo " in text
            text = text.replace("helper_command = sudo ", "helper_command = ")
        path.write_text(text)
    commands = [line for line in next(
        block for block in found if not block.caption).text.splitlines()
        if line.strip()]
    visudo = shutil.which("visudo")
    env = {k: v for k, v in os.environ.items() if k != "TMPDIR"}
    for line in commands:
        argv = shlex.split(_adapt(line, tmp_path), comments=True)
        if argv[0] in ("apt-get", "dnf"):
            continue
        if argv[0] == "visudo" and not visudo:
            continue
        if argv[0] == "sudo":
            assert argv[1:3] == ["-u", "cyborg"], line
            argv = argv[3:]
        proc = subprocess.run(argv, capture_output=True, text=True,
                              timeout=120, env=env)
        assert proc.returncode == 0, (line, proc.stdout, proc.stderr)

    assert proc.stdout.strip().splitlines()[-1] == "privsep daemon started"
    # It was the page's filter that let it through, not the privsep-helper
    # filter oslo.rootwrap adds to every set.
    probe = subprocess.run(
        [sys.executable, "-c", _PROBE, str(tmp_path / "etc" /
                                          "cyborg_lite.conf")],
        capture_output=True, text=True, check=True)
    command = json.loads(probe.stdout.strip().splitlines()[-1])
    rootwrap_conf = configparser.RawConfigParser()
    rootwrap_conf.read(command[1])
    config = wrapper.RootwrapConfig(rootwrap_conf)
    matched = wrapper.match_filter(wrapper.load_filters(config.filters_path),
                                   command[2:], exec_dirs=config.exec_dirs)
    assert isinstance(matched, rootwrap_filters.RegExpFilter)
