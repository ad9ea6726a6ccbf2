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


"""Microversions of the accelerator API, declared once.

History for people: ``rest_api_version_history.rst`` next to this module.
"""

import microversion_parse
from oslo_log import log as logging

from cyborg_lite import exception

LOG = logging.getLogger(__name__)

SERVICE_TYPE = "accelerator"
HEADER = "OpenStack-API-Version"
MIN_HEADER = "OpenStack-API-Minimum-Version"
MAX_HEADER = "OpenStack-API-Maximum-Version"

VERSIONS = [
    "2.0",  # The Cyborg v2 API: device profiles, ARQs, devices, deployables.
    "2.1",  # ARQ PATCH may carry /project_id (admins only).
    "2.2",  # GET /v2/device_profiles/{name} works by name.
    "2.3",  # Devices include "status".
    "2.4",  # Deployables include "state", devices "health".
]


class Version(tuple):
    """A (major, minor) microversion that compares as a tuple."""

    def __new__(cls, text):
        major, _, minor = str(text).partition(".")
        return super().__new__(cls, (int(major), int(minor)))

    def __str__(self):
        return f"{self[0]}.{self[1]}"

    def matches(self, minimum=None, maximum=None):
        """True when ``minimum <= self <= maximum`` (each optional)."""
        if minimum is not None and self < Version(minimum):
            return False
        if maximum is not None and self > Version(maximum):
            return False
        return True


MIN_VERSION = Version(VERSIONS[0])
MAX_VERSION = Version(VERSIONS[-1])


RANGE = f"The supported version range is: [{MIN_VERSION}, {MAX_VERSION}]."


def parse(header_value):
    """The microversion a request asks for, parsed as Cyborg 17 parses it.

    ``accelerator 2.N`` (found by microversion_parse among the services a
    header names), else the whole header as a bare ``2.N`` (logged);
    ``latest`` in either form; no header means 2.0.

    :raises VersionNotAcceptable: for a value that does not parse (a header
        naming only other services included, as in Cyborg) or a version
        outside the declared versions, with Cyborg's texts.
    """
    if not header_value or not header_value.strip():
        return MIN_VERSION
    chosen = microversion_parse.get_version({HEADER: header_value},
                                            service_type=SERVICE_TYPE)
    if chosen is None:
        LOG.debug("%s %r names no %s version; read as a bare version",
                  HEADER, header_value, SERVICE_TYPE)
        chosen = header_value
    if chosen.strip().lower() == "latest":
        return MAX_VERSION
    try:
        parsed = microversion_parse.parse_version_string(chosen)
    except TypeError:
        raise exception.VersionNotAcceptable(
            f"Invalid value for {HEADER} header")
    version = Version(f"{parsed.major}.{parsed.minor}")
    if version[0] != MIN_VERSION[0]:
        raise exception.VersionNotAcceptable(
            f"Mutually exclusive versions requested. Version {version} "
            f"requested but not supported by this service. {RANGE}")
    if not version.matches(MIN_VERSION, MAX_VERSION):
        raise exception.VersionNotAcceptable(
            f"Version {version} was requested but the minor version is not "
            f"supported by this service. {RANGE}")
    return version


def response_headers(version):
    """Headers every /v2/* response carries."""
    headers = {MIN_HEADER: str(MIN_VERSION), MAX_HEADER: str(MAX_VERSION),
               "Vary": HEADER}
    if version is not None:
        headers[HEADER] = f"{SERVICE_TYPE} {version}"
    return headers
