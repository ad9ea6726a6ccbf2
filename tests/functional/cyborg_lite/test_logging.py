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

"""The logging configuration admin/operations.rst ("JSON logs") gives for
``[DEFAULT] log_config_append``, used as printed by a real gunicorn API."""

import json
import pathlib
import textwrap
import uuid

import requests

from tests.fixtures.cyborg import ADMIN
from tests.fixtures.cyborg_server import CyborgServer

OPERATIONS = (pathlib.Path(__file__).resolve().parents[3] / "doc" / "source"
              / "admin" / "operations.rst")
CAPTION = "   :caption: /etc/cyborg_lite/logging.conf\n\n"


def _documented_logging_conf():
    text = OPERATIONS.read_text()
    block = text[text.index(CAPTION) + len(CAPTION):]
    lines = []
    for line in block.splitlines():
        if line and not line.startswith("   "):
            break
        lines.append(line)
    return textwrap.dedent("\n".join(lines))


def test_documented_log_config_append_writes_json_with_the_ids(tmp_path):
    logging_conf = tmp_path / "logging.conf"
    logging_conf.write_text(_documented_logging_conf())
    global_id = f"req-{uuid.uuid4()}"

    with CyborgServer(tmp_path / "api", workers=1, options={
            "DEFAULT": {"log_config_append": str(logging_conf)}}) as server:
        response = requests.get(
            f"{server.url}/v2/device_profiles",
            headers=dict(ADMIN, **{"X-OpenStack-Request-ID": global_id}),
            timeout=30)
        assert response.status_code == 200
        local_id = response.headers["x-openstack-request-id"]
        log = server.log_file.read_text()

    records = [json.loads(line) for line in log.splitlines()
               if line.startswith("{")]
    mine = [r for r in records
            if r["context"].get("global_request_id") == global_id]
    assert {r["context"]["request_id"] for r in mine} == {local_id}, log
    (line,) = [r for r in mine if r["name"] == "cyborg_lite.api.requestlog"]
    assert line["message"].startswith('"GET /v2/device_profiles" status: 200')
    assert line["levelname"] == "INFO"
