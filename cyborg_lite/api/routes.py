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
"""

import flask

from cyborg_lite.api.handlers import accelerator_requests
from cyborg_lite.api.handlers import deployables
from cyborg_lite.api.handlers import device_profiles
from cyborg_lite.api.handlers import devices
from cyborg_lite.api.handlers import versions

_ARQ = accelerator_requests
_DP = device_profiles

#: (resource module, URL rule, {HTTP method: handler})
ROUTES = (
    (versions, "/", {"GET": versions.root}),
    (versions, "/v2", {"GET": versions.v2}),
    (_DP, "/v2/device_profiles", {"GET": _DP.list_profiles,
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
    (devices, "/v2/devices", {"GET": devices.list_devices}),
    (devices, "/v2/devices/<uuid>", {"GET": devices.show}),
    (devices, "/v2/devices/<uuid>/enable", {"POST": devices.enable}),
    (devices, "/v2/devices/<uuid>/disable", {"POST": devices.disable}),
)


def make_blueprints():
    """Fresh blueprints (one per resource module) holding ROUTES."""
    blueprints = {}
    for module, rule, methods in ROUTES:
        name = module.__name__.rsplit(".", 1)[-1]
        bp = blueprints.get(name)
        if bp is None:
            bp = blueprints[name] = flask.Blueprint(name, module.__name__)
        for method, handler in methods.items():
            bp.add_url_rule(rule, endpoint=f"{handler.__name__}",
                            view_func=handler, methods=[method],
                            provide_automatic_options=False)
    return list(blueprints.values())
