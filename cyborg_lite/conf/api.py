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

"""API service options: [DEFAULT] auth_strategy, [api], [noauth]."""

from keystoneauth1 import loading as ks_loading
from keystonemiddleware import auth_token
from oslo_config import cfg
from oslo_middleware import cors
from oslo_middleware import opts as middleware_opts

default_opts = [
    cfg.StrOpt("auth_strategy", default="keystone",
               choices=[("noauth", "trust the X-Project-Id, X-User-Id, "
                                   "X-Roles and X-Service-Roles headers, as "
                                   "real Cyborg does behind a disabled "
                                   "authtoken filter; for trusted networks "
                                   "and standalone hosts only"),
                        ("keystone", "validate tokens with "
                                     "keystonemiddleware (configure "
                                     "[keystone_authtoken])")],
               help="How API requests are authenticated. Keystone by "
                    "default, as Nova, Placement and Cyborg: noauth trusts "
                    "whatever identity headers a client sends, so it is "
                    "chosen explicitly, for a trusted network or a "
                    "standalone host."),
]

api_opts = [
    cfg.HostAddressOpt("host", default="127.0.0.1",
                       help="Address the development server "
                            "(cyborg-lite-api) listens on. Production runs "
                            "cyborg_lite.wsgi:application under gunicorn "
                            "or uWSGI instead."),
    cfg.PortOpt("port", default=6666,
                help="Port of the development server; 6666 is Cyborg's "
                     "standalone port."),
    cfg.ListOpt("service_token_roles", default=None,
                deprecated_for_removal=True,
                deprecated_reason="The roles of a service token are set "
                                  "once, in keystonemiddleware's "
                                  "[keystone_authtoken] service_token_roles, "
                                  "which cyborg_lite reads too.",
                help="Deprecated: set [keystone_authtoken] "
                     "service_token_roles instead. When set, it must equal "
                     "that option (the service refuses to start "
                     "otherwise)."),
    cfg.URIOpt("public_endpoint", schemes=["http", "https"],
               help="The URL clients reach this API at, up to but not "
                    "including /v2 (e.g. https://cloud.example.org:6666 or "
                    "https://cloud.example.org/accelerator): every link "
                    "(self, bookmark, next, the version documents) starts "
                    "with it. Unset: links are built from the request, "
                    "after [oslo_middleware] enable_proxy_headers_parsing "
                    "applied a proxy's headers; a malformed Host header is "
                    "refused. Set it in production, so no link depends on "
                    "what a client sends."),
    cfg.IntOpt("max_limit", default=1000, min=1,
               help="Largest page a list request returns; a larger "
                    "'limit' is cut down to this. A full page carries a "
                    "next link (<key>_links and a Link header) to the "
                    "rest."),
    cfg.IntOpt("max_arqs_per_request", default=64, min=1,
               max=10000,
               help="Most accelerator requests one request may create "
                    "(the sum of a device profile's resources: amounts, "
                    "checked when the profile is created and again when "
                    "its ARQs are), bind, unbind or delete."),
]

noauth_opts = [
    cfg.StrOpt("default_project_id", default="standalone",
               help="With auth_strategy=noauth, the project a request "
                    "without identity headers acts as. Only for trusted "
                    "networks and standalone hosts."),
    cfg.ListOpt("default_roles", default=[],
                help="With auth_strategy=noauth, the roles of a request "
                     "without identity headers. Empty by default: such a "
                     "request may read only what policy grants to anyone; "
                     "a standalone host sets e.g. admin,member,reader."),
    cfg.ListOpt("default_service_roles", default=[],
                help="With auth_strategy=noauth, the service-token roles "
                     "of a request without identity headers. Empty by "
                     "default; a standalone operator who binds and unbinds "
                     "by hand sets service."),
]

def register_opts(conf):
    """Register the API options on ``conf``."""
    conf.register_opts(default_opts)
    conf.register_opts(api_opts, group="api")
    conf.register_opts(noauth_opts, group="noauth")
    # NOTE(cyborg_lite): registered up front so [keystone_authtoken] can be
    # set before the middleware is built; the sample generator takes them
    # from the keystonemiddleware.auth_token namespace.
    for group, opts in auth_token.list_opts():
        conf.register_opts(opts, group=group)
    _set_cors_defaults()
    for group, opts in _middleware_opts():
        conf.register_opts(opts, group=group)


def _set_cors_defaults():
    """The headers a browser client sends and reads, for [cors]."""
    cors.set_defaults(
        allow_headers=["X-Auth-Token", "X-Service-Token",
                       "X-OpenStack-Request-ID", "OpenStack-API-Version",
                       "Content-Type"],
        expose_headers=["X-OpenStack-Request-ID", "OpenStack-API-Version",
                        "Link"],
        allow_methods=["GET", "POST", "PATCH", "DELETE"])


def _middleware_opts():
    """oslo.middleware's options of the middleware cyborg_lite runs."""
    return (middleware_opts.list_opts_healthcheck()
            + middleware_opts.list_opts_sizelimit()
            + middleware_opts.list_opts_http_proxy_to_wsgi()
            + middleware_opts.list_opts_cors())


def service_token_roles(conf):
    """The roles of a service token that make a request a service request
    (bind, unbind, delete-by-instance, deleting a bound ARQ): keystone-
    middleware's ``[keystone_authtoken] service_token_roles``.

    :raises ValueError: when the deprecated ``[api] service_token_roles``
        is set to something else, so the two can never disagree silently.
    """
    roles = list(conf.keystone_authtoken.service_token_roles)
    deprecated = conf.api.service_token_roles
    if deprecated is not None and sorted(deprecated) != sorted(roles):
        raise ValueError(
            f"[api] service_token_roles ({', '.join(deprecated)}) differs "
            f"from [keystone_authtoken] service_token_roles "
            f"({', '.join(roles)}); remove the deprecated [api] option and "
            f"set the roles in [keystone_authtoken] only.")
    return roles


def list_opts():
    """(group, options) pairs for oslo-config-generator."""
    _set_cors_defaults()
    return [("DEFAULT", default_opts), ("api", api_opts),
            ("noauth", noauth_opts),
            # NOTE(cyborg_lite): keystonemiddleware's namespace lists only
            # auth_type/auth_section of [keystone_authtoken]; the password
            # plugin's options are what a deployment sets.
            ("keystone_authtoken",
             ks_loading.get_auth_plugin_conf_options("password"))
            ] + _middleware_opts()
