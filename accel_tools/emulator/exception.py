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

"""The emulator's exceptions: each becomes a Redfish error response."""


class EmulatorError(Exception):
    """Base of the emulator's errors."""


class NotFound(EmulatorError, LookupError):
    """A Redfish resource does not exist."""


class BadRequest(EmulatorError, ValueError):
    """A request is invalid; ``message_id`` is a Base registry message key."""

    def __init__(self, message, message_id="GeneralError", args=()):
        super().__init__(message)
        self.message_id = message_id
        self.args_ = list(args)


class ImageError(EmulatorError):
    """The image cannot be downloaded or is not an emulator image."""
