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


"""The request context: who is calling, built from the WSGI environment."""

from oslo_context import context

from cyborg_lite.conf import api as api_conf

#: Keystone's default implied roles; noauth expands them the same way so
#: ``X-Roles: admin`` also satisfies ``role:reader`` rules.
_IMPLIED = {"admin": ("member", "manager", "reader"),
            "manager": ("member", "reader"),
            "member": ("reader",)}


class RequestContext(context.RequestContext):
    """oslo.context plus the service-token test of CONTRACT.md §1."""

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
