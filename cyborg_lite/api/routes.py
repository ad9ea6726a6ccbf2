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


"""Every endpoint of the API, in one table.

One Blueprint per resource module; each is registered at the root and again
under ``/accelerator`` (where devstack mounts Cyborg). A known path with an
unknown method gets 405 with ``Allow`` from werkzeug's routing, turned into
the error envelope by :mod:`cyborg_lite.api.errors`.

As in real Cyborg's root controller, a path whose first segment (after an
optional ``/accelerator``) is not ``v2`` is served as ``/v2/<path>``:
``GET /accelerator_requests`` is ``GET /v2/accelerator_requests``, with the
same version headers and errors. ``/`` and ``/accelerator`` stay the root
document. :func:`route_to_v2` does it before routing; registering the
blueprints installs it.

A GET computes its answer and writes nothing. One read is more than a
read: Nova's lookup of the profile of a boot it is about to schedule
(``GET /v2/device_profiles?name=NAME`` with a service token). Nova's
scheduler then reads nothing but Placement, so what the answer relies on
(the lookup counted, regions kept for it, their lock traits in Placement)
must be written before the answer leaves. Such a method maps to
``(handler, step)``: the step runs after the handler, with its response,
records what the request means and returns the response sent
(:func:`device_profiles.route_lookup
<cyborg_lite.api.handlers.device_profiles.route_lookup>`, which leaves
every other read's answer as the handler computed it).
"""

import functools

import flask

from cyborg_lite.api import common
from cyborg_lite.api.handlers import accelerator_requests
from cyborg_lite.api.handlers import attributes
from cyborg_lite.api.handlers import deployables
from cyborg_lite.api.handlers import device_profiles
from cyborg_lite.api.handlers import devices
from cyborg_lite.api.handlers import versions

_ARQ = accelerator_requests
_DP = device_profiles

#: (resource module, URL rule, {HTTP method: handler, or (handler, the
#: step that records what the request means, see above)})
ROUTES = (
    (versions, "/", {"GET": versions.root}),
    (versions, "/v2", {"GET": versions.v2}),
    (_DP, "/v2/device_profiles", {"GET": (_DP.list_profiles,
                                          _DP.route_lookup),
                                  "POST": _DP.create,
                                  "DELETE": _DP.delete_by_value}),
    (_DP, "/v2/device_profiles/<ident>", {"GET": _DP.show,
                                          "DELETE": _DP.delete}),
    (_ARQ, "/v2/accelerator_requests", {"GET": _ARQ.list_arqs,
                                        "POST": _ARQ.create,
                                        "PATCH": _ARQ.update,
                                        "DELETE": _ARQ.delete}),
    (_ARQ, "/v2/accelerator_requests/<arq_uuid>", {"GET": _ARQ.show,
                                                   "PATCH": _ARQ.update_one,
                                                   "DELETE": _ARQ.delete_one}),
    (deployables, "/v2/deployables", {"GET": deployables.list_deployables}),
    (deployables, "/v2/deployables/<uuid>", {"GET": deployables.show}),
    (deployables, "/v2/deployables/<uuid>/program",
     {"PATCH": deployables.program}),
    (devices, "/v2/devices", {"GET": devices.list_devices}),
    (devices, "/v2/devices/<uuid>", {"GET": devices.show}),
    (devices, "/v2/devices/<uuid>/enable", {"POST": devices.enable}),
    (devices, "/v2/devices/<uuid>/disable", {"POST": devices.disable}),
    (attributes, "/v2/attributes", {"GET": attributes.list_attributes,
                                    "POST": attributes.create}),
    (attributes, "/v2/attributes/<uuid>", {"GET": attributes.show,
                                           "DELETE": attributes.delete}),
)


def v2_path(path):
    """The path a request for ``path`` is served at (see module doc)."""
    prefix = ""
    if path == common.PREFIX or path.startswith(common.PREFIX + "/"):
        prefix, path = common.PREFIX, path[len(common.PREFIX):]
    first = path.lstrip("/").split("/", 1)[0]
    if not first or first == "v2":
        return prefix + path
    return f"{prefix}/v2{path}"


def route_to_v2(wsgi_app):
    """WSGI middleware serving un-versioned paths as ``/v2/...``."""
    def middleware(environ, start_response):
        environ["PATH_INFO"] = v2_path(environ.get("PATH_INFO") or "/")
        return wsgi_app(environ, start_response)
    middleware.routes_to_v2 = True
    return middleware


def _install_v2_routing(state):
    # NOTE(cyborg_lite): installed from blueprint registration so every app
    # built from these routes gets it; it wraps the Flask app itself, inside
    # any middleware create_app adds afterwards (keystonemiddleware).
    app = state.app
    if not getattr(app.wsgi_app, "routes_to_v2", False):
        app.wsgi_app = route_to_v2(app.wsgi_app)


def make_blueprints():
    """Fresh blueprints (one per resource module) holding ROUTES."""
    blueprints = {}
    for module, rule, methods in ROUTES:
        name = module.__name__.rsplit(".", 1)[-1]
        bp = blueprints.get(name)
        if bp is None:
            bp = blueprints[name] = flask.Blueprint(name, module.__name__)
            bp.record_once(_install_v2_routing)
        for method, handler in methods.items():
            if isinstance(handler, tuple):
                handler = _then(*handler)
            bp.add_url_rule(rule, endpoint=f"{handler.__name__}",
                            view_func=handler, methods=[method],
                            provide_automatic_options=False)
    return list(blueprints.values())


def _then(handler, step):
    """The view that runs ``handler``, then ``step`` on its response."""
    @functools.wraps(handler)
    def view(**kwargs):
        return step(handler(**kwargs))
    return view
