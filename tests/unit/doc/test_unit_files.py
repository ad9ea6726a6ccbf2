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

"""The systemd units admin/operations.rst shows run what the playbook's
units run: same user, environment and command, with the role's defaults."""

import configparser
import re

import pytest

from tests.unit.doc import blocks

TEMPLATES = blocks.ROOT / "playbooks" / "roles" / "cyborg_lite" / "templates"

#: the role's defaults behind the values the page shows.
DEFAULTS = {
    "ansible_managed": "managed",
    "cyborg_lite_bin_dir": "/opt/cyborg-lite/bin",
    "cyborg_lite_config_file": "/etc/cyborg_lite/cyborg_lite.conf",
    "cyborg_lite_user": "cyborg",
    "cyborg_lite_group": "cyborg",
    "cyborg_lite_api_workers": 4,
    "cyborg_lite_api_bind_host": "0.0.0.0",
    "cyborg_lite_api_port": 6666,
    "cyborg_lite_api_service_name": "cyborg-lite-api",
    "cyborg_lite_agent_host": "compute-0.example.org",
}


def _service(text):
    unit = configparser.ConfigParser(interpolation=None, strict=False)
    unit.optionxform = str
    unit.read_string(text)
    return {key: value for key, value in unit["Service"].items()}


def _shown(name):
    return next(block for block in blocks.blocks(
        blocks.DOCS / "admin" / "operations.rst")
        if block.caption.endswith(f"/{name}.service"))


@pytest.mark.parametrize("name", ["cyborg-lite-api", "cyborg-lite-agent"])
def test_unit_shown_runs_what_the_role_s_unit_runs(name):
    # NOTE(docs): the unit templates substitute plain variables only.
    rendered = re.sub(r"\{\{\s*(\w+)\s*\}\}",
                      lambda match: str(DEFAULTS[match.group(1)]),
                      (TEMPLATES / f"{name}.service.j2").read_text())
    role = _service(rendered)

    assert _service(_shown(name).text) == role
