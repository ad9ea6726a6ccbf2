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


"""The application factory."""

import dataclasses
import typing

import flask
from oslo_log import log as logging

from cyborg_lite import context as context_mod
from cyborg_lite import exception
from cyborg_lite import notifier as notifier_mod
from cyborg_lite import periodics as periodics_mod
from cyborg_lite import policy
from cyborg_lite.api import common
from cyborg_lite.api import errors
from cyborg_lite.api import microversion
from cyborg_lite.api import middleware
from cyborg_lite.api import routes
from cyborg_lite.api import validation
from cyborg_lite.conf import api as api_conf
from cyborg_lite.db import engine as db_engine
from cyborg_lite.db import schema as schema_mod
from cyborg_lite.programming import programmer as programmer_mod
from cyborg_lite.programming import providers as providers_mod
from cyborg_lite.scheduling import locks as locks_mod
from cyborg_lite.scheduling import routing
from cyborg_lite.scheduling import siblings as siblings_mod

LOG = logging.getLogger(__name__)

#: paths anyone may read, also with auth_strategy = keystone.
PUBLIC_PATHS = {"/", "/v2", "/v2/", common.PREFIX, common.PREFIX + "/",
                common.PREFIX + "/v2", common.PREFIX + "/v2/"}


@dataclasses.dataclass
class Services:
    """What handlers reach through ``common.services()``."""

    conf: typing.Any
    db: db_engine.Database
    enforcer: typing.Any
    notifier: typing.Any
    #: bind-time, admin and pool programming
    #: (:class:`cyborg_lite.programming.programmer.Programmer`); None means
    #: "programming at bind time is not available".
    programmer: typing.Any = None
    #: the process's background work (:class:`cyborg_lite.periodics.
    #: Periodics`), when the app started it.
    periodics: typing.Any = None
    #: whether the database's schema is current
    #: (:class:`cyborg_lite.db.schema.Guard`).
    schema: typing.Any = None
    #: the regions' lock traits in Placement
    #: (:class:`cyborg_lite.scheduling.locks.LockTraits`).
    locks: typing.Any = None
    #: moves a bind to a sibling region
    #: (:class:`cyborg_lite.scheduling.siblings.SiblingMover`).
    siblings: typing.Any = None
    #: routes Nova's device profile lookups
    #: (:class:`cyborg_lite.scheduling.routing.Router`).
    router: typing.Any = None

    def stop(self):
        """Stop the background work and wait for the programming runs."""
        if self.periodics is not None:
            self.periodics.stop()
        if self.programmer is not None:
            self.programmer.stop()


#: paths whose answer needs no database (the version documents).
_NO_DATABASE = ("/", "/v2")


def _before_request():
    svc = common.services()
    flask.g.context = context_mod.from_environ(flask.request.environ,
                                               svc.conf)
    flask.g.version = None
    path = flask.request.path
    if path.startswith(common.PREFIX):
        path = path[len(common.PREFIX):] or "/"
    path = path.rstrip("/") or "/"
    flask.g.is_v2 = path.startswith("/v2")
    if flask.g.is_v2:
        flask.g.version = microversion.parse(
            flask.request.headers.get(microversion.HEADER))
    validation.check_path(flask.request.view_args)
    common.check_host()
    if path not in _NO_DATABASE:
        problem = svc.schema.problem()
        if problem is not None:
            raise exception.SchemaNotCurrent(reason=problem)


def _after_request(response):
    if flask.g.get("is_v2"):
        for name, value in microversion.response_headers(
                flask.g.get("version")).items():
            response.headers[name] = value
    return response


#: create_app's default: build the Programmer from the configuration.
DEFAULT = object()


def create_app(conf, db=None, programmer=DEFAULT, notifier=None):
    """Build the API application.

    :param conf: an oslo.config ConfigOpts with cyborg_lite's options
        registered and parsed.
    :param db: a :class:`cyborg_lite.db.engine.Database`; by default the one
        ``[database] connection`` names (its schema must be synced).
    :param programmer: a :class:`~cyborg_lite.programming.programmer.
        Programmer`; by default one built from ``conf``, and the process's
        background work (:mod:`cyborg_lite.periodics`: leases, reconciler,
        inventory sync) starts with the app; None: no programming at bind
        time (binds needing it get 409).
    :param notifier: sends Nova's accelerator-request-bound events; by
        default a :class:`cyborg_lite.notifier.NovaNotifier` from ``[nova]``.
    :returns: a Flask app (a WSGI application).
    """
    api_conf.service_token_roles(conf)  # refuse to start on a conflict
    # NOTE(cyborg_lite): a WSGI worker builds this at its first request;
    # waiting there for a database that is down (oslo.db's start-up
    # retries, up to 100 s) would hold that request and the worker. Each
    # request answers 503 with Retry-After instead while it is down.
    db = db or db_engine.Database.from_conf(conf, wait_for_database=False)
    guard = schema_mod.Guard(db.engine)
    notifier = notifier or notifier_mod.NovaNotifier(conf, db)
    periodics = None
    if programmer is DEFAULT:
        programmer = programmer_mod.Programmer(conf, db, notifier=notifier)
        periodics = periodics_mod.Periodics(conf, db, programmer, notifier,
                                            schema=guard)
        periodics.start()
    elif programmer is not None and programmer.notifier is None:
        programmer.notifier = notifier
    providers = (programmer.providers if programmer is not None
                 else providers_mod.RegionProviders(conf))
    locks = (programmer.locks if programmer is not None
             else locks_mod.LockTraits(db, providers))
    app = flask.Flask("cyborg_lite")
    app.json.sort_keys = False
    app.url_map.strict_slashes = False
    app.extensions["cyborg_lite"] = Services(
        conf=conf, db=db, enforcer=policy.make_enforcer(conf),
        notifier=notifier, programmer=programmer, periodics=periodics,
        schema=guard, locks=locks,
        siblings=siblings_mod.SiblingMover(db, providers),
        router=routing.Router(conf, db, locks))

    # Middleware, innermost first: identity and microversion per request,
    # version headers on /v2 replies, one error handler for everything.
    app.before_request(_before_request)
    app.after_request(_after_request)
    errors.register(app)
    for blueprint in routes.make_blueprints():
        app.register_blueprint(blueprint)
        app.register_blueprint(blueprint, url_prefix=common.PREFIX,
                               name=f"{blueprint.name}_accelerator")

    # The WSGI middleware (request id, proxy headers, CORS, /healthcheck,
    # body size limit, Keystone) is listed in cyborg_lite.api.middleware.
    app.wsgi_app = middleware.wrap(app.wsgi_app, conf,
                                   app.extensions["cyborg_lite"],
                                   PUBLIC_PATHS)
    return app
