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

"""The WSGI middleware around the Flask app, wired in one place
(:func:`wrap`), as Placement's ``deploy.py`` wires its own."""

from keystonemiddleware import auth_token
from oslo_log import log as logging
from oslo_middleware import cors
from oslo_middleware import http_proxy_to_wsgi
from oslo_middleware import request_id
from oslo_middleware import sizelimit
import webob
import webob.dec

from cyborg_lite import exception
from cyborg_lite.api import errors
from cyborg_lite.api import health
from cyborg_lite.api import requestlog
from cyborg_lite.metrics import endpoint as metrics_endpoint

LOG = logging.getLogger(__name__)


class BodySizeLimiter(sizelimit.RequestBodySizeLimiter):
    """oslo.middleware's body size limit, answering its 413 in the API's
    error format with the limit in the message.

    A body announced larger than ``[oslo_middleware] max_request_body_size``
    is refused here before anything reads it; a chunked one is cut while
    being read (:func:`cyborg_lite.api.common.json_body` answers that).
    """

    @webob.dec.wsgify
    def __call__(self, req):
        limit = self._conf_get("max_request_body_size")
        if req.content_length is not None and req.content_length > limit:
            error = exception.RequestTooLarge(limit=limit)
            LOG.info("%s", error.message)
            return webob.Response(
                status=error.code, content_type="application/json",
                charset="utf-8",
                json_body=errors.envelope(error.code, error.message))
        return super().__call__(req)


def _keystone(wsgi_app, conf, public_paths):
    """keystonemiddleware in front of ``wsgi_app``, leaving
    ``public_paths`` (the version documents) open so keystoneauth's
    discovery works before authenticating."""
    protected = auth_token.AuthProtocol(wsgi_app,
                                        {"oslo_config_config": conf})

    def dispatch(environ, start_response):
        if environ.get("PATH_INFO", "/") in public_paths:
            return wsgi_app(environ, start_response)
        return protected(environ, start_response)

    return dispatch


def wrap(wsgi_app, conf, services, public_paths):
    """``wsgi_app`` (the Flask app's) inside the standard middleware.

    :param services: the app's :class:`~cyborg_lite.api.app.Services`
        (for ``/healthcheck`` and ``/metrics``).
    :param public_paths: paths served without a token.
    :returns: the outermost WSGI application.
    """
    # NOTE(cyborg_lite): listed from the inside out: a request meets
    # RequestId first, so every answer, even a 401, 413 or /healthcheck,
    # carries x-openstack-request-id and every log line of the request
    # its id and the caller's global request id (requestlog);
    # then the proxy's headers are applied (scheme, host and
    # prefix the links use), CORS answers preflights, /healthcheck is
    # served without a body or a token, /metrics by who may scrape it,
    # an announced body over the limit is refused before authentication
    # reads anything, the token is validated, and the binds are timed just
    # outside the app (their latency is the API's, not Keystone's). A
    # layer that would do nothing with this configuration (no CORS origin,
    # proxy headers not trusted, noauth) is left out: each costs a webob
    # round trip per request.
    layers = [
        (True, metrics_endpoint.time_binds),
        (conf.auth_strategy == "keystone",
         lambda app: _keystone(app, conf, public_paths)),
        (True, lambda app: BodySizeLimiter(app, conf)),
        (conf.metrics.enabled,
         lambda app: metrics_endpoint.wrap(app, conf, services)),
        (True, lambda app: health.wrap(app, conf, services)),
        (bool(conf.cors.allowed_origin), lambda app: cors.CORS(app, conf)),
        (conf.oslo_middleware.enable_proxy_headers_parsing,
         lambda app: http_proxy_to_wsgi.HTTPProxyToWSGI(app, conf)),
        (True, requestlog.RequestLog),
        (True, request_id.RequestId),
    ]
    for wanted, layer in layers:
        if wanted:
            wsgi_app = layer(wsgi_app)
    return wsgi_app
