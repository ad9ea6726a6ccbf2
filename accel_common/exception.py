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

"""The errors of the shared contract, one base for all of them."""

#: Placement's error code for a generation conflict worth a re-read.
CONCURRENT_UPDATE = "placement.concurrent_update"


class AccelCommonError(Exception):
    """Base of accel_common's errors."""


class InvalidInventory(AccelCommonError, ValueError):
    """The document does not follow the schema; the message names the field."""


class InvalidTree(AccelCommonError, ValueError):
    """The document cannot be turned into a provider tree."""


class PlacementError(AccelCommonError):
    """Placement refused a call; ``status`` and ``code`` say how."""

    def __init__(self, method, url, response):
        self.method = method
        self.url = url
        self.status = response.status_code
        self.code = None
        detail = response.text
        try:
            error = response.json()["errors"][0]
            self.code = error.get("code")
            detail = error.get("detail") or detail
        except (ValueError, KeyError, IndexError, TypeError):
            pass
        super().__init__(f"Placement {method} {url} answered {self.status}"
                         f"{' (' + self.code + ')' if self.code else ''}: "
                         f"{detail.strip()}")

    @property
    def is_conflict(self):
        """True for a generation conflict worth a re-read and retry.

        Placement 16 also answers 500 to a generation-checked write of a
        provider's traits or inventories when a concurrent write of the same
        provider wins the race inside its transaction
        (``ResourceProviderConcurrentUpdateDetected`` escapes as a server
        error); a re-read and retry is the right answer to that too.
        """
        if self.status == 409:
            return self.code == CONCURRENT_UPDATE
        return (self.status == 500 and self.method == "PUT"
                and self.url.endswith(("/traits", "/inventories")))
