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


"""The request context: who is calling, built from the WSGI environment,
and the ids that follow one request into every log line and to the agent."""

from oslo_context import context

from cyborg_lite.conf import api as api_conf

#: Keystone's default implied roles; noauth expands them the same way so
#: ``X-Roles: admin`` also satisfies ``role:reader`` rules.
_IMPLIED = {"admin": ("member", "manager", "reader"),
            "manager": ("member", "reader"),
            "member": ("reader",)}


class RequestContext(context.RequestContext):
    """oslo.context plus the service-token test: is this Nova acting
for a user (doc/source/admin/security.rst, "Service requests")?"""

    def __init__(self, service_token_roles=("service",), **kwargs):
        super().__init__(**kwargs)
        self.service_token_roles = tuple(service_token_roles)

    @property
    def is_admin_role(self):
        """True when the user token carries ``admin``."""
        return "admin" in self.roles

    @property
    def is_service(self):
        """True for a service request: a service token with a service role
        (as keystonemiddleware's ``service_token_roles``)."""
        return bool(set(self.service_roles or ())
                    & set(self.service_token_roles))


def _expand(roles):
    expanded = []
    for role in roles:
        for name in (role,) + _IMPLIED.get(role, ()):
            if name not in expanded:
                expanded.append(name)
    return expanded


def from_environ(environ, conf):
    """Build the context of a request.

    With ``auth_strategy = noauth`` and no identity header at all, the
    request acts as ``[noauth] default_project_id`` with the default roles.
    """
    ctx = RequestContext.from_environ(
        environ, service_token_roles=api_conf.service_token_roles(conf))
    if conf.auth_strategy == "noauth":
        identity = ("HTTP_X_PROJECT_ID", "HTTP_X_USER_ID", "HTTP_X_ROLES",
                    "HTTP_X_SERVICE_ROLES", "HTTP_X_TENANT_ID")
        if not any(environ.get(key) for key in identity):
            ctx.project_id = conf.noauth.default_project_id
            ctx.roles = list(conf.noauth.default_roles)
            ctx.service_roles = list(conf.noauth.default_service_roles)
        ctx.roles = _expand(ctx.roles)
    return ctx


#: what a context carries to the agent: the ids and who asked, the ones
#: oslo.log's ``logging_context_format_string`` prints (never the token).
RPC_KEYS = ("request_id", "global_request_id", "user", "project_id",
            "domain", "user_domain", "project_domain")


def track(request_id, global_request_id=None):
    """Make a context naming only a request's ids this thread's current
    one, so every log line from here on carries them (before the full
    context of :func:`from_environ` exists).

    :returns: that context.
    """
    return context.RequestContext(request_id=request_id,
                                  global_request_id=global_request_id,
                                  overwrite=True)


def carry(function):
    """``function`` made to run with this thread's current context, for
    work handed to a thread pool: the pool's thread then logs with the
    ids of the request that asked for it."""
    current = context.get_current()

    def run(*args, **kwargs):
        if current is not None:
            current.update_store()
        try:
            return function(*args, **kwargs)
        finally:
            clear()

    return run


def for_rpc():
    """The current request's ids as an RPC context (a dict); ``{}``
    outside a request."""
    current = context.get_current()
    if current is None:
        return {}
    values = current.to_dict()
    return {key: values[key] for key in RPC_KEYS if values.get(key)}


def adopt(rpc_context):
    """Make the context an RPC call carries (:func:`for_rpc`) the current
    one of this thread, so the agent's log lines of that call carry the
    request's ids; an empty one clears what an earlier call left.

    :returns: the context, or None.
    """
    if not isinstance(rpc_context, dict) or not rpc_context:
        clear()
        return None
    return context.RequestContext.from_dict(rpc_context, overwrite=True)


def clear():
    """Forget this thread's current context (after a call it served)."""
    # NOTE(cyborg_lite): oslo.context has no public way to forget it, and
    # a fresh empty context would print a made-up request id; a thread of
    # the agent's pool serves calls with and without a request in turn.
    vars(context._request_store).pop("context", None)
