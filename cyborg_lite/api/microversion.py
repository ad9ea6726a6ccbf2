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


def _not_acceptable(value):
    return exception.NotAcceptable(
        reason=f"Version {value!r} is not supported by the API. Minimum is "
               f"{MIN_VERSION} and maximum is {MAX_VERSION}.")


def parse(header_value):
    """The microversion a request asks for.

    Accepts ``accelerator 2.N``, the bare ``2.N`` (logged, as real Cyborg
    does), ``latest`` in either form, and a comma-separated list naming
    several services. No value (or none for this service) means 2.0.

    :raises NotAcceptable: for a version outside 2.0-2.3 or one that does
        not parse.
    """
    if not header_value or not header_value.strip():
        return MIN_VERSION
    chosen = None
    for item in header_value.split(","):
        words = item.split()
        if len(words) == 2 and words[0].lower() == SERVICE_TYPE:
            chosen = words[1]
        elif len(words) == 1 and chosen is None:
            LOG.debug("Bare microversion %r in %s; read as accelerator",
                      words[0], HEADER)
            chosen = words[0]
        elif len(words) not in (1, 2):
            raise _not_acceptable(item.strip())
    if chosen is None:
        return MIN_VERSION
    if chosen.lower() == "latest":
        return MAX_VERSION
    try:
        version = Version(chosen)
    except ValueError:
        raise _not_acceptable(chosen)
    if not version.matches(MIN_VERSION, MAX_VERSION):
        raise _not_acceptable(chosen)
    return version


def response_headers(version):
    """Headers every /v2/* response carries."""
    headers = {MIN_HEADER: str(MIN_VERSION), MAX_HEADER: str(MAX_VERSION),
               "Vary": HEADER}
    if version is not None:
        headers[HEADER] = f"{SERVICE_TYPE} {version}"
    return headers
