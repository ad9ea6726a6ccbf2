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

"""A broker vhost deleted under a running API does not flood its log.

oslo.messaging's reply listener retries a failed consume at once and logs
each try with a traceback; the service bounds what reaches the log
(:mod:`cyborg_lite.log_limits`). Real RabbitMQ, a vhost of the test's own,
deleted while the listener runs.
"""

import re
import subprocess
import sys
import textwrap
import uuid

import pytest

pytestmark = pytest.mark.rabbitmq

#: Seconds the listener runs without its vhost.
WITHOUT_VHOST = 6

_SCRIPT = textwrap.dedent("""
    import subprocess, sys, time
    from cyborg_lite import service
    from cyborg_lite.agent import rpcapi
    conf = service.prepare(["--config-file", sys.argv[1]], prog="flood")
    try:
        rpcapi.AgentAPI(conf).discover("no-such-host.test")
    except Exception as exc:
        print(type(exc).__name__)
    subprocess.run(["rabbitmqctl", "delete_vhost", sys.argv[2]],
                   check=True, capture_output=True)
    time.sleep(float(sys.argv[3]))
    sys.stdout.flush()
    import os
    os._exit(0)
""")

#: What starts each line oslo.log writes: time, pid, level, logger. The
#: lines of one record (its traceback's too) share it.
_PREFIX = re.compile(r"^(\d{4}-\d{2}-\d{2} [\d:.]+ \d+ [A-Z]+ \S+)",
                     re.MULTILINE)


def _rabbitmqctl(*args):
    subprocess.run(["rabbitmqctl", *args], check=True, capture_output=True)


def test_deleted_vhost_writes_a_bounded_log(tmp_path, rabbitmq_url):
    vhost = f"flood_{uuid.uuid4().hex[:8]}"
    _rabbitmqctl("add_vhost", vhost)
    _rabbitmqctl("set_permissions", "-p", vhost, "guest", ".*", ".*", ".*")
    log_file = tmp_path / "api.log"
    conf_file = tmp_path / "cyborg_lite.conf"
    conf_file.write_text(
        f"[DEFAULT]\ntransport_url = {rabbitmq_url.rstrip('/')}/{vhost}\n"
        f"log_file = {log_file}\n\n[agent]\nrpc_timeout = 2\n"
        f"rpc_retry = 0\n")
    try:
        run = subprocess.run(
            [sys.executable, "-c", _SCRIPT, str(conf_file), vhost,
             str(WITHOUT_VHOST)],
            capture_output=True, text=True, timeout=120)
    finally:
        subprocess.run(["rabbitmqctl", "delete_vhost", vhost],
                       capture_output=True)

    assert run.returncode == 0, run.stderr
    assert "AgentTimeout" in run.stdout
    log = log_file.read_text()
    failures = [line for line in log.splitlines()
                if "Failed to process incoming message" in line
                or "Failed to consume message" in line
                or "is unreachable" in line]
    # Each template passes at most BURST times in the window; unbounded,
    # the listener wrote hundreds of records a second.
    assert failures, log[-2000:]
    records = set(_PREFIX.findall(log))
    assert len(records) < 40, sorted(records)
    assert len(log.splitlines()) < 1500
