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


"""The one error handler: every error leaves as Cyborg's envelope.

``{"error_message": "<JSON of {faultcode, faultstring, debuginfo}>"}``, the
double encoding real Cyborg (WSME) produces, which openstacksdk and
python-cyborgclient decode; microversion errors carry ``{code, title,
description}`` there instead, as Cyborg's version layer answers them.
"""

import http
import json

import flask
from oslo_db import exception as db_exc
from oslo_log import log as logging
from werkzeug import exceptions as http_exceptions

from cyborg_lite import exception
from cyborg_lite.db import engine as db_engine

LOG = logging.getLogger(__name__)


def envelope(status, message):
    """The JSON body of an error response."""
    fault = {"faultcode": "Client" if status < 500 else "Server",
             "faultstring": message, "debuginfo": None}
    return {"error_message": json.dumps(fault)}


def webob_envelope(status, message):
    """The body real Cyborg's version layer (webob, below WSME) answers
    with: ``code``, ``title`` and ``description`` inside ``error_message``.
    """
    fault = {"code": status, "title": http.HTTPStatus(status).phrase,
             "description": message}
    return {"error_message": json.dumps(fault)}


def _response(status, message, headers=None, shape=envelope):
    response = flask.jsonify(shape(status, message))
    response.status_code = status
    for name, value in (headers or {}).items():
        response.headers[name] = value
    return response


def _first_line(error):
    text = str(getattr(error, "inner_exception", None) or error)
    return text.splitlines()[0] if text else type(error).__name__


#: methods that never write.
_READS = ("GET", "HEAD", "OPTIONS")


def _from_database(error):
    """The API's exception for an oslo.db one, or None.

    An unreachable database (or a deadlock that outlived its retries) is
    a 503 the client may retry (for a request that writes, one that says
    the write may have been made); a race the database settled (a
    duplicate key, a reference to a row deleted meanwhile) is a 409.
    """
    if db_engine.unreachable(error):
        if flask.request.method in _READS:
            return exception.DatabaseUnavailable(
                reason="cannot connect to it")
        return exception.WriteOutcomeUnknown(reason="cannot connect to it")
    if isinstance(error, db_exc.DBDeadlock):
        return exception.DatabaseUnavailable(
            reason="a transaction deadlocked on every retry")
    if isinstance(error, db_exc.DBReferenceError):
        return exception.ConcurrentChange(
            reason="a row it refers to is gone or still referred to")
    if isinstance(error, db_exc.DBDuplicateEntry):
        return exception.ConcurrentChange(
            reason="a row it adds was added meanwhile")
    return None


def handle(error):
    """Turn any exception raised while serving a request into a response."""
    translated = _from_database(error)
    if translated is not None:
        # NOTE(cyborg_lite): one line, no traceback: while a database node
        # is down every request ends here.
        LOG.warning("%s %s: %s: %s", flask.request.method,
                    flask.request.path, translated.message,
                    _first_line(error))
        return _response(translated.code, translated.message,
                         translated.headers)
    if isinstance(error, exception.VersionNotAcceptable):
        return _response(error.code, error.message, error.headers,
                         shape=webob_envelope)
    if isinstance(error, exception.CyborgLiteException):
        if error.code >= 500:
            LOG.error("%s", error.message)
        return _response(error.code, error.message, error.headers)
    if isinstance(error, http_exceptions.HTTPException):
        headers = {}
        if isinstance(error, http_exceptions.MethodNotAllowed):
            headers["Allow"] = ", ".join(sorted(error.valid_methods or ()))
        return _response(error.code, error.description, headers)
    LOG.exception("Unexpected error serving %s %s", flask.request.method,
                  flask.request.path)
    return _response(500, "Internal server error; see the service log.")


def register(app):
    """Install :func:`handle` for every exception on ``app``."""
    app.register_error_handler(Exception, handle)
