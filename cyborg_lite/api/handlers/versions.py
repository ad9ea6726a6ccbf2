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


"""Version documents: ``/`` and ``/v2``, linking to where they were served."""

import flask

from cyborg_lite.api import common
from cyborg_lite.api import microversion

DESCRIPTION = ("Cyborg is the OpenStack project for general purpose "
               "management framework for acceleration resources; this is "
               "cyborg_lite, a slim Cyborg v2-compatible service.")


def _version(version_id, href):
    return {"id": version_id, "status": "CURRENT",
            "min_version": str(microversion.MIN_VERSION),
            "max_version": str(microversion.MAX_VERSION),
            "links": [{"href": href, "rel": "self"}]}


def root():
    """GET /: the root document."""
    version = _version("v2", f"{common.base_url()}/v2")
    return flask.jsonify({"name": "OpenStack Cyborg API",
                          "description": DESCRIPTION,
                          "versions": [version],
                          "default_version": version})


def v2():
    """GET /v2: the version document (no wrapper, as real Cyborg)."""
    return flask.jsonify(_version("v2.0", f"{common.base_url()}/v2/"))
