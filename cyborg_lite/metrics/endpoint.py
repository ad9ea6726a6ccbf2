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

"""``GET /metrics`` and the bind timer, as WSGI middleware
(wired by :func:`cyborg_lite.api.middleware.wrap`).

Who may scrape: a client in ``[metrics] allowed_source_ranges`` without a
token (Prometheus cannot renew a Keystone token), anyone else with a
token the ``cyborg:metrics:get`` policy allows (administrators by
default). It is not a separate port: under gunicorn every worker would
have to bind it, and only one can.
"""

import http
import ipaddress
import json
import time

from keystonemiddleware import auth_token
from oslo_log import log as logging
import prometheus_client
from prometheus_client import exposition

from cyborg_lite import context as context_mod
from cyborg_lite import exception
from cyborg_lite import policy
from cyborg_lite.api import common
from cyborg_lite.api import errors
from cyborg_lite.conf import metrics as metrics_conf
from cyborg_lite.metrics import process
from cyborg_lite.metrics import state

LOG = logging.getLogger(__name__)

PATH = "/metrics"
RULE = "cyborg:metrics:get"
#: the paths of a bind (PATCH), with and without the /accelerator prefix.
BIND_PATHS = ("/v2/accelerator_requests",
              common.PREFIX + "/v2/accelerator_requests")
_PROXIED = ("HTTP_X_FORWARDED_FOR", "HTTP_FORWARDED")


def _error(start_response, code, message, headers=()):
    data = json.dumps(errors.envelope(code, message)).encode()
    start_response(f"{code} {http.HTTPStatus(code).phrase}",
                   [("Content-Type", "application/json"),
                    ("Content-Length", str(len(data))), *headers])
    return [data]


def exposition_of(db, accept):
    """The metrics, in the format ``accept`` asks for.

    :returns: (body bytes, content type).
    """
    registry = prometheus_client.CollectorRegistry(auto_describe=False)
    for collector in process.collectors():
        registry.register(collector)
    registry.register(state.StateCollector(db))
    encoder, content_type = exposition.choose_encoder(accept or "")
    return encoder(registry), content_type


def wrap(wsgi_app, conf, services):
    """``wsgi_app`` with ``GET /metrics`` served in front of it.

    :param services: the app's :class:`~cyborg_lite.api.app.Services`
        (its database and policy enforcer).
    :raises ValueError: ``[metrics] allowed_source_ranges`` holds
        something that is not a network.
    """
    networks = metrics_conf.source_networks(conf)

    def serve(environ, start_response):
        body, content_type = exposition_of(services.db,
                                           environ.get("HTTP_ACCEPT"))
        start_response("200 OK", [("Content-Type", content_type),
                                  ("Content-Length", str(len(body)))])
        return [body]

    def by_policy(environ, start_response):
        ctx = context_mod.from_environ(environ, conf)
        try:
            policy.authorize(services.enforcer, RULE, ctx)
        except exception.PolicyNotAuthorized as error:
            LOG.info("%s", error.message)
            return _error(start_response, error.code, error.message)
        return serve(environ, start_response)

    checked = by_policy
    if conf.auth_strategy == "keystone":
        checked = auth_token.AuthProtocol(by_policy,
                                          {"oslo_config_config": conf})

    def dispatch(environ, start_response):
        if environ.get("PATH_INFO") != PATH:
            return wsgi_app(environ, start_response)
        if environ.get("REQUEST_METHOD") != "GET":
            return _error(start_response, 405,
                          f"{environ.get('REQUEST_METHOD')} is not allowed "
                          f"on {PATH}; use GET.", [("Allow", "GET")])
        if _from_allowed_network(environ, networks):
            return serve(environ, start_response)
        return checked(environ, start_response)

    return dispatch


def _from_allowed_network(environ, networks):
    if not networks or any(environ.get(h) for h in _PROXIED):
        return False
    try:
        address = ipaddress.ip_address(environ.get("REMOTE_ADDR", ""))
    except ValueError:
        return False
    return any(address in network for network in networks)


def time_binds(wsgi_app):
    """``wsgi_app`` with the binds it answers timed
    (``cyborg_lite_bind_duration_seconds``); any other request costs one
    comparison."""

    def timed(environ, start_response):
        if (environ.get("REQUEST_METHOD") != "PATCH"
                or environ.get("PATH_INFO", "").rstrip("/")
                not in BIND_PATHS):
            return wsgi_app(environ, start_response)
        status = []

        def recording(code, headers, exc_info=None):
            status.append(code.split(" ", 1)[0])
            return start_response(code, headers, exc_info)

        started = time.monotonic()
        result = wsgi_app(environ, recording)
        # NOTE(metrics): the app has answered once it returns (a Flask
        # response is built in full); the Nova events it queued on close
        # are sent later and are not the bind's latency.
        process.bind_answered(status[0] if status else "none",
                              time.monotonic() - started)
        return result

    return timed
