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

"""``cyborg-lite-manage`` as the inventory tests run it: in this process,
on the file of the ``config_file`` fixture."""

import json
import uuid

import pytest

from cyborg_lite.cmd import manage


def run_manage(config_file, *args):
    """Run ``cyborg-lite-manage --config-file config_file args``; its exit
    code."""
    with pytest.raises(SystemExit) as exit_info:
        manage.main(["--config-file", config_file, *args])
    return exit_info.value.code


def write_document(directory, document):
    """``document`` in a new JSON file under ``directory``; its path."""
    path = directory / f"inventory-{uuid.uuid4().hex}.json"
    path.write_text(json.dumps(document))
    return str(path)


def import_document(directory, config_file, document):
    """``inventory import`` of ``document``, which must succeed."""
    code = run_manage(config_file, "inventory", "import",
                      write_document(directory, document))
    assert code == 0, f"inventory import exited {code}"
