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

"""The one place that uses sushy's private names.

A resource read through a link of another (an FPGA slot's
AccelerationFunction) is built on the connector of the resource linking
it, which sushy keeps as ``ResourceBase._conn``: :func:`connector_of`.

sushy's Connector sends JSON bodies (``json=``) and multipart forms
(``files=``), but not a raw body, which ``HttpPushUri`` needs: the image is
the request body (DSP0266 "HttpPushUri"). sushy has no public form for it,
so :func:`post_raw` borrows the connector's session, base URL and TLS
setting. An upgrade of sushy that renames them breaks here, and its own
test (tests/unit/ironic_accel/redfish/test_private_api.py) says so.
"""

import sushy


def connector_of(resource):
    """The sushy Connector a resource was read with."""
    return resource._conn


def post_raw(connector, path, body, headers, timeout):
    """POST ``body`` (bytes or a binary file) as is to ``path`` over the
    connector's authenticated session.

    :returns: the requests Response.
    :raises: sushy's HTTPError (and subclasses) for a status of 400 or more,
        as the connector's own requests raise them.
    """
    # NOTE(ironic-accel): Connector._session carries the session token or
    # basic auth sushy set up; _url and _verify are what it was built with.
    response = connector._session.post(
        connector._url.rstrip("/") + path, data=body, headers=headers,
        verify=connector._verify, timeout=timeout)
    sushy.exceptions.raise_for_response("POST", path, response)
    return response
