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

"""One log line per API request, with the request's ids."""

import logging

from oslo_context import context as oslo_context
from oslo_middleware import request_id
import pytest

from cyborg_lite import context
from cyborg_lite.api import requestlog

GLOBAL = "req-11111111-2222-3333-4444-555555555555"


@pytest.fixture(autouse=True)
def no_context():
    context.clear()
    yield
    context.clear()


def _serve(path, status="202 Accepted", query=""):
    seen = []

    def app(environ, start_response):
        seen.append(oslo_context.get_current())
        start_response(status, [])
        return [b""]

    wrapped = request_id.RequestId(requestlog.RequestLog(app))
    answers = []
    answer = wrapped({"REQUEST_METHOD": "PATCH", "PATH_INFO": path,
             "QUERY_STRING": query, "SERVER_NAME": "x", "SERVER_PORT": "80",
             "wsgi.url_scheme": "http",
             "HTTP_X_OPENSTACK_REQUEST_ID": GLOBAL},
            lambda s, h, e=None: answers.append(dict(h)))
    list(answer)
    answer.close()
    return seen[0], answers[0]["x-openstack-request-id"]


def test_the_app_runs_with_the_ids_and_the_answer_is_logged(caplog):
    caplog.set_level(logging.DEBUG, "cyborg_lite.api.requestlog")

    current, local_id = _serve("/v2/accelerator_requests", query="a=1")

    assert (current.request_id, current.global_request_id) == (
        local_id, GLOBAL)
    (record,) = caplog.records
    assert record.levelno == logging.INFO
    assert record.getMessage().startswith(
        '"PATCH /v2/accelerator_requests?a=1" status: 202 time: ')


def test_healthcheck_is_logged_at_debug_only(caplog):
    caplog.set_level(logging.DEBUG, "cyborg_lite.api.requestlog")

    _serve("/healthcheck", status="200 OK")

    assert [r.levelno for r in caplog.records] == [logging.DEBUG]


def test_the_ids_are_forgotten_once_the_answer_is_closed():
    _serve("/v2/device_profiles", status="200 OK")

    assert oslo_context.get_current() is None
