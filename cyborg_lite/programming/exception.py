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

"""Errors of region programming, answered as 409 like the bind conflicts."""

from cyborg_lite import exception


class ProgrammingConflict(exception.Conflict):
    """A bind that needs programming cannot have it now; the ARQ is
    ``BindFailed`` and Nova gets a ``failed`` event (it reschedules)."""

    msg_fmt = "Region %(deployable)s cannot be programmed: %(reason)s"


class RegionBusy(ProgrammingConflict):
    msg_fmt = ("Region %(deployable)s is being programmed with %(target)s; "
               "ARQ %(arq)s asks for %(asked)s.")


class RegionInUse(ProgrammingConflict):
    msg_fmt = ("Region %(deployable)s runs %(running)s and %(count)d attach "
               "handle(s) of its %(scope)s are in use; it cannot be "
               "reprogrammed with %(asked)s%(arq_text)s.")


class RegionNotProgrammable(ProgrammingConflict):
    msg_fmt = "Region %(deployable)s is %(state)s%(detail)s."


class ProgrammingDisabled(exception.Conflict):
    msg_fmt = ("Programming is disabled ([programming] enabled = false); "
               "region %(deployable)s runs %(running)s, %(asked)s was "
               "asked.")


class ProgrammingFailed(exception.CyborgLiteException):
    """The agent could not program the region (real Cyborg: 500)."""

    code = 500
    msg_fmt = "%(reason)s"
