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

"""Domain errors. Each carries its HTTP status and a message format; the API
turns them into Cyborg's ``{"error_message": ...}`` envelope in one place
(:mod:`cyborg_lite.api.errors`)."""


def some(names, shown=5):
    """``names`` joined for a message, the first ``shown`` of them and how
    many more, so an error never echoes thousands of ids."""
    names = list(names)
    text = ", ".join(names[:shown])
    if len(names) > shown:
        text += f" and {len(names) - shown} more"
    return text


class CyborgLiteException(Exception):
    """Base error: ``code`` is the HTTP status, ``msg_fmt`` the message."""

    code = 500
    msg_fmt = "An unknown error occurred."
    #: extra response headers, e.g. Allow.
    headers = None

    def __init__(self, message=None, **kwargs):
        self.kwargs = kwargs
        if message is None:
            message = self.msg_fmt % kwargs if kwargs else self.msg_fmt
        self.message = message
        super().__init__(message)


class Invalid(CyborgLiteException):
    code = 400
    msg_fmt = "Invalid request: %(reason)s"


class InvalidParameter(Invalid):
    msg_fmt = "Invalid query parameter %(name)s: %(reason)s"


class RequestTooLarge(CyborgLiteException):
    code = 413
    msg_fmt = ("Request is too large. Larger than max_request_body_size "
               "(%(limit)s).")


class Forbidden(CyborgLiteException):
    code = 403
    msg_fmt = "Access was denied to this resource: %(reason)s"


class PolicyNotAuthorized(Forbidden):
    msg_fmt = "Policy doesn't allow %(action)s to be performed."


class ServiceTokenRequired(Forbidden):
    # NOTE(cyborg_lite): "requires a service token" are Cyborg's words,
    # which clients (cyborg-tempest-plugin) look for.
    msg_fmt = ("%(action)s requires a service token (X-Service-Roles with "
               "one of %(roles)s). Use the Compute API to manage instance "
               "accelerators.")


class NotFound(CyborgLiteException):
    code = 404
    msg_fmt = "Resource could not be found."


class DeviceProfileNotFound(NotFound):
    msg_fmt = "Device profile %(name)s could not be found."


class ARQNotFound(NotFound):
    msg_fmt = "Accelerator request(s) %(uuids)s could not be found."


class DeployableNotFound(NotFound):
    msg_fmt = "Deployable %(ident)s could not be found."


class DeviceNotFound(NotFound):
    msg_fmt = "Device %(ident)s could not be found."


class ResourceProviderNotFound(NotFound):
    msg_fmt = ("No deployable has resource provider %(rp_uuid)s "
               "(device_rp_uuid of ARQ %(arq)s).")


class NotAcceptable(CyborgLiteException):
    code = 406
    msg_fmt = "%(reason)s"


class VersionNotAcceptable(NotAcceptable):
    """A microversion header refused by the version layer: answered, as
    real Cyborg's webob layer answers it, with ``code``/``title``/
    ``description`` inside ``error_message`` instead of WSME's fault."""

    msg_fmt = "%(reason)s"


class SchemaNotCurrent(CyborgLiteException):
    """The database's schema is not the one this code needs
    (:mod:`cyborg_lite.db.schema` words the message)."""

    code = 503
    msg_fmt = "%(reason)s"


class DatabaseUnavailable(CyborgLiteException):
    """The database cannot be reached (down, restarting, or a Galera node
    not yet synced) while serving a read, or a transaction deadlocked on
    every retry: the request changed nothing and may be retried."""

    code = 503
    msg_fmt = ("The database is unavailable (%(reason)s). Retry in a few "
               "seconds.")
    #: seconds a client should wait before retrying.
    RETRY_AFTER = 5
    headers = {"Retry-After": str(RETRY_AFTER)}


class WriteOutcomeUnknown(DatabaseUnavailable):
    """The database was lost while serving a request that writes: the
    database may have committed the write before its answer was lost (a
    create then made its rows), so a retry may do it a second time."""

    msg_fmt = ("The database is unavailable (%(reason)s). The request may "
               "have been carried out before the database's answer was "
               "lost: read the current state before retrying it (in a few "
               "seconds).")


class Conflict(CyborgLiteException):
    code = 409
    msg_fmt = "Conflict: %(reason)s"


class ConcurrentChange(Conflict):
    """A write lost a race the database decided: a row it refers to was
    deleted, or one it adds was added, by a concurrent request."""

    msg_fmt = ("The request conflicts with a concurrent change: %(reason)s. "
               "Read the current state before retrying.")


class DeviceProfileExists(Conflict):
    msg_fmt = "Device profile with name %(name)s already exists."


class DeviceProfileUuidExists(DeviceProfileExists):
    msg_fmt = "Device profile with uuid %(uuid)s already exists."


class DeviceProfileInUse(Conflict):
    msg_fmt = ("Device profile %(name)s is used by %(count)d accelerator "
               "request(s); delete them first.")


class ARQBadState(Conflict):
    msg_fmt = ("Accelerator request %(uuid)s is %(state)s; %(action)s "
               "needs one of %(expected)s.")


class NoFreeAttachHandle(Conflict):
    msg_fmt = ("No free attach handle on deployable %(deployable)s "
               "(resource provider %(rp_uuid)s) for ARQ %(arq)s.")


class NICHandleWithoutPhysnet(Conflict):
    msg_fmt = ("ARQ %(arq)s cannot be bound to NIC region %(deployable)s "
               "(resource provider %(rp_uuid)s): its attach handle(s) "
               "%(handles)s name no physical_network, which Nova needs to "
               "bind the port; import an inventory that names it.")


class DeployableNotReady(Conflict):
    msg_fmt = "Deployable %(deployable)s is %(state)s, not ready for binds."


class ProgrammingUnavailable(Conflict):
    msg_fmt = ("Region %(deployable)s runs %(running)s but ARQ %(arq)s asks "
               "for %(asked)s; programming at bind time is not available "
               "yet.")


class Locked(CyborgLiteException):
    code = 423
    msg_fmt = ("Accelerator requests of instance %(instance)s are not "
               "resolved yet: %(pending)s.")


class AttributeNotFound(NotFound):
    msg_fmt = "Attribute %(uuid)s could not be found."


class AttributeExists(Conflict):
    msg_fmt = ("Deployable %(deployable)s already has an attribute "
               "%(key)r (%(uuid)s); delete it first.")


class UnknownDeployable(Invalid):
    msg_fmt = ("deployable_id %(ident)r names no deployable (give its "
               "integer id or its uuid).")


class CapacityError(CyborgLiteException):
    """A provider kept changing while its capacity was written (raised and
    caught inside the inventory sync)."""

    msg_fmt = "%(reason)s"


class UnsupportedCyborgSchema(Invalid):
    msg_fmt = ("The Cyborg database is at schema revision %(found)s, which "
               "this import does not know; supported revisions: "
               "%(supported)s. Upgrade Cyborg (cyborg-dbsync upgrade) to "
               "one of them first.")


class NotACyborgDatabase(Invalid):
    msg_fmt = ("%(url)s is not a Cyborg database: %(reason)s.")
