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

"""Errors of region programming, answered as 409 like the bind conflicts.

Nova 34 does not reschedule a failed bind: a 409 to its bind PATCH puts the
server in ERROR at once (nova-conductor raises
``AcceleratorRequestBindingFailed``), and so does a ``failed`` event. What
cyborg_lite can know while it handles the PATCH is therefore answered there,
synchronously; the scheduler is kept away from regions that cannot serve a
group by their lock traits (:mod:`~cyborg_lite.scheduling.locks`).
"""

from cyborg_lite import exception


class ProgrammingConflict(exception.Conflict):
    """A bind that needs programming cannot have it now: the PATCH answers
    409 and its ARQs are ``BindFailed`` (Nova puts the server in ERROR)."""

    msg_fmt = "Region %(deployable)s cannot be programmed: %(reason)s"


class RegionBusy(ProgrammingConflict):
    msg_fmt = ("Region %(deployable)s is being programmed with %(target)s; "
               "ARQ %(arq)s asks for %(asked)s.")


class RegionInUse(ProgrammingConflict):
    msg_fmt = ("Region %(deployable)s runs %(running)s and %(count)d attach "
               "handle(s) of its %(scope)s are in use; it cannot be "
               "reprogrammed with %(asked)s%(arq_text)s.")


class RegionKept(ProgrammingConflict):
    msg_fmt = ("Region %(deployable)s is kept for %(kept)s, for the boots "
               "Nova's lookups were routed to; ARQ %(arq)s asks for "
               "%(asked)s.")


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


class NoImageForTarget(ProgrammingConflict):
    """Found before anything is sent to the device: no image carries what
    the group asks for, or the host's agent cannot say which does."""

    msg_fmt = ("Region %(deployable)s cannot be programmed with %(asked)s: "
               "%(reason)s")
