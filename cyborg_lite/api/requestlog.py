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

"""One log line per API request, with its ids (as Placement's
``requestlog``).

Placed just inside oslo.middleware's ``RequestId`` (which sets
``openstack.request_id`` and, from a well-formed ``X-OpenStack-Request-ID``
header, ``openstack.global_request_id``), it makes a context naming both
the current one of this thread before anything else runs, so every line of
the request carries them, the lines of authentication and body limits
included; the app later replaces it with the full context. It is
forgotten once the answer is closed (after what the app runs on close), so
the worker's own lines between requests carry no stale ids. With Nova's
global request id an operator finds a boot's requests in the API's log
(and in the agent's: :mod:`cyborg_lite.agent.rpcapi` sends the ids).
"""

import time

from oslo_log import log as logging
from oslo_middleware import request_id

from cyborg_lite import context

LOG = logging.getLogger(__name__)

#: paths logged at DEBUG only: load balancers poll them every few seconds.
QUIET_PATHS = ("/healthcheck",)


class RequestLog:
    """WSGI middleware: the request's ids current, then
    ``"METHOD /path?query" status: N time: S`` at INFO once answered."""

    def __init__(self, application):
        self.application = application

    def __call__(self, environ, start_response):
        context.track(environ.get(request_id.ENV_REQUEST_ID),
                      environ.get(request_id.GLOBAL_REQ_ID))
        started = time.monotonic()
        status = []

        def recording_start_response(line, headers, exc_info=None):
            status.append(line.split(" ", 1)[0])
            return start_response(line, headers, exc_info)

        try:
            answer = self.application(environ, recording_start_response)
        except BaseException:
            context.clear()
            raise
        finally:
            self._log(environ, status[-1] if status else "-",
                      time.monotonic() - started)
        return _Closing(answer)

    @staticmethod
    def _log(environ, status, seconds):
        path = environ.get("PATH_INFO", "/")
        query = environ.get("QUERY_STRING")
        uri = f"{path}?{query}" if query else path
        level = (logging.DEBUG if path in QUIET_PATHS else logging.INFO)
        LOG.log(level, '"%s %s" status: %s time: %.3f',
                environ.get("REQUEST_METHOD"), uri, status, seconds)


class _Closing:
    """The app's answer, forgetting the request's context once closed."""

    def __init__(self, answer):
        self._answer = answer

    def __iter__(self):
        return iter(self._answer)

    def close(self):
        try:
            close = getattr(self._answer, "close", None)
            if close is not None:
                close()
        finally:
            context.clear()
