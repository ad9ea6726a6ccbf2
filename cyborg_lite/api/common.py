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


"""Helpers every handler uses: the app's services, the caller, the
microversion, query parameters, links and timestamps."""

import datetime
import re
from urllib import parse

import flask
from oslo_log import log as logging
from webob import exc as webob_exc
from werkzeug import exceptions as http_exceptions

from cyborg_lite import exception
from cyborg_lite.api import validation

LOG = logging.getLogger(__name__)

#: where the API is mounted besides the root (as devstack mounts Cyborg).
PREFIX = "/accelerator"


def services():
    """The :class:`cyborg_lite.api.app.Services` of the running app."""
    return flask.current_app.extensions["cyborg_lite"]


def context():
    """The request context built by the app's before_request hook."""
    return flask.g.context


def version():
    """The microversion of this request."""
    return flask.g.version


#: a Host header: a DNS name (a trailing dot allowed) or IPv4 address, or
#: a bracketed IPv6 address, and an optional port.
_HOST = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([A-Za-z0-9._-]*"
                   r"[A-Za-z0-9])?\.?)(:[0-9]{1,5})?")


def check_host():
    """:raises Invalid: when the request's host (its Host header, or the
    one a trusted proxy forwarded) is not a host name, which links would
    otherwise carry (RFC 9112 §3.2: a server answers 400)."""
    host = flask.request.host
    if not _HOST.fullmatch(host):
        raise exception.Invalid(
            reason=f"the Host header {host[:100]!r} is not a host name")


def _mounted_by_prefix():
    return (flask.request.blueprint or "").endswith("_accelerator")


def base_url():
    """Where this request's API is mounted, e.g. ``http://h/accelerator``:
    ``[api] public_endpoint`` when set, else the request's own URL (scheme,
    host and script name as oslo.middleware's HTTPProxyToWSGI left them,
    the host checked by :func:`check_host`)."""
    public = services().conf.api.public_endpoint
    if public:
        return public.rstrip("/")
    prefix = PREFIX if _mounted_by_prefix() else ""
    return (f"{flask.request.scheme}://{flask.request.host}"
            f"{flask.request.script_root}{prefix}")


def request_url():
    """This request's URL (without query) under :func:`base_url`."""
    path = flask.request.path
    if _mounted_by_prefix():
        path = path[len(PREFIX):]
    return base_url() + path


def link(collection, uuid, bookmark=False):
    """Links of one object, as WSME Cyborg renders them."""
    links = [{"href": f"{base_url()}/v2/{collection}/{uuid}", "rel": "self"}]
    if bookmark:
        links.append({"href": f"{base_url()}/{collection}/{uuid}",
                      "rel": "bookmark"})
    return links


def timestamp(value):
    """ISO 8601 with an explicit UTC offset, or None."""
    if value is None:
        return None
    return value.replace(microsecond=0,
                         tzinfo=datetime.timezone.utc).isoformat()


def query(allowed):
    """The query parameters of the request, each given at most once.

    :param allowed: the names this endpoint understands.
    :raises InvalidParameter: for an unknown or repeated parameter (real
        Cyborg: 400 ``Unknown argument``).
    """
    args = flask.request.args
    values = {}
    for name in args:
        if name not in allowed:
            validation.check_query(name, "")
            raise exception.InvalidParameter(
                name=name, reason=f"Unknown argument: {name!r}; this "
                                  f"endpoint accepts {', '.join(allowed)}")
        given = args.getlist(name)
        if len(given) > 1:
            raise exception.InvalidParameter(
                name=name, reason="given more than once")
        validation.check_query(name, given[0])
        values[name] = given[0]
    return values


def pagination(params):
    """(limit, marker) from query parameters, limit capped by
    ``[api] max_limit``."""
    limit = params.get("limit")
    if limit is not None:
        limit = validation.integer_id(limit)
        if not limit:
            raise exception.InvalidParameter(
                name="limit", reason="must be a positive integer")
        limit = min(limit, services().conf.api.max_limit)
    else:
        limit = services().conf.api.max_limit
    return limit, params.get("marker")


def listing(key, page, items):
    """The response of a list request: ``{key: items}``; when ``page``
    (a :class:`cyborg_lite.db.engine.Page`) has more after it, also a
    ``<key>_links`` next link (as Nova's lists carry, which openstacksdk
    follows) and the same link in a ``Link`` header (RFC 8288), so no
    client silently gets part of a list.
    """
    body = {key: items}
    marker = getattr(page, "next_marker", None)
    if marker is None:
        return flask.jsonify(body)
    args = {name: value for name, value in flask.request.args.items()
            if name != "marker"}
    args["marker"] = marker
    args.setdefault("limit", str(len(page)))
    href = f"{request_url()}?{parse.urlencode(args)}"
    body[f"{key}_links"] = [{"rel": "next", "href": href}]
    response = flask.jsonify(body)
    response.headers["Link"] = f'<{href}>; rel="next"'
    return response


def json_body():
    """The decoded JSON body, checked for what the database can store
    (:mod:`cyborg_lite.api.validation`).

    :raises Invalid: when it is not JSON or holds what cannot be stored.
    """
    try:
        raw = flask.request.get_data(cache=True)
    except webob_exc.HTTPRequestEntityTooLarge:
        # NOTE(cyborg_lite): a chunked body (no Content-Length) crossing
        # [oslo_middleware] max_request_body_size while being read.
        raise exception.RequestTooLarge(
            limit=services().conf.oslo_middleware.max_request_body_size)
    except http_exceptions.HTTPException:
        raise  # werkzeug's own answer (a client that disconnected: 400)
    except Exception as error:
        # NOTE(cyborg_lite): anything the WSGI server's input stream raises
        # is what the client sent failing to arrive: a malformed chunked
        # encoding (gunicorn's InvalidChunkSize, werkzeug's "Invalid chunk
        # header"), a body shorter than its Content-Length, a reset. Each
        # server raises its own classes, so none is named here.
        reason = (f"the request body could not be read: "
                  f"{str(error) or type(error).__name__}")
        LOG.info("%s", reason)
        raise exception.Invalid(reason=reason)
    if not raw:
        raise exception.Invalid(reason="the body must be JSON")
    return validation.decode_body(raw)


def empty(status):
    """An empty response (no body, no content type)."""
    response = flask.Response(status=status)
    response.headers.pop("Content-Type", None)
    return response


def require_service(action):
    """The CVE-2026-40214 hard check: ``action`` needs a service token.

    :raises ServiceTokenRequired:
    """
    ctx = context()
    if not ctx.is_service:
        raise exception.ServiceTokenRequired(
            action=action, roles=", ".join(ctx.service_token_roles))
