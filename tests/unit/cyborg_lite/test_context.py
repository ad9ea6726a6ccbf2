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

"""The ids that follow a request: into this thread's log lines, a pool's
thread and, as the RPC context, to the agent."""

from concurrent import futures
import logging

from oslo_config import cfg
from oslo_context import context as oslo_context
from oslo_log import formatters
from oslo_log import log
import pytest

from cyborg_lite import context

GLOBAL = "req-11111111-2222-3333-4444-555555555555"
LOCAL = "req-66666666-7777-8888-9999-000000000000"


@pytest.fixture(autouse=True)
def no_context():
    context.clear()
    yield
    context.clear()


def _line(message="hello"):
    """One log line as oslo.log's default format writes it."""
    record = logging.LogRecord("cyborg_lite.test", logging.INFO, __file__,
                               1, message, (), None)
    conf = cfg.ConfigOpts()
    log.register_options(conf)
    conf([])
    return formatters.ContextFormatter(project="cyborg_lite",
                                       config=conf).format(record)


def test_track_puts_both_ids_on_this_threads_lines():
    context.track(LOCAL, GLOBAL)

    assert f"[{GLOBAL} {LOCAL} " in _line()


def test_carry_runs_pool_work_with_the_askers_ids():
    context.track(LOCAL, GLOBAL)
    work = context.carry(lambda: oslo_context.get_current())
    context.clear()

    with futures.ThreadPoolExecutor(1) as pool:
        ran_with = pool.submit(work).result()
        left = pool.submit(oslo_context.get_current).result()

    assert ran_with.global_request_id == GLOBAL
    assert left is None


def test_for_rpc_carries_ids_and_who_but_never_the_token():
    oslo_context.RequestContext(
        request_id=LOCAL, global_request_id=GLOBAL, user_id="nova",
        project_id="p1", auth_token="secret", overwrite=True)

    carried = context.for_rpc()

    assert carried == {"request_id": LOCAL, "global_request_id": GLOBAL,
                       "user": "nova", "project_id": "p1"}


def test_for_rpc_outside_a_request_is_empty():
    assert context.for_rpc() == {}


def test_adopt_makes_the_callers_ids_current_and_empty_clears():
    context.adopt({"request_id": LOCAL, "global_request_id": GLOBAL})
    assert oslo_context.get_current().global_request_id == GLOBAL
    assert GLOBAL in _line()

    assert context.adopt({}) is None
    assert oslo_context.get_current() is None
    assert GLOBAL not in _line()

