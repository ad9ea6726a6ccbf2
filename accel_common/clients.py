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

"""openstacksdk connections built from keystoneauth option groups.

Both halves configure their clients of other services the way Nova and Cyborg
do: one option group per service, named after the project (``[placement]``,
``[ironic]``, ``[nova]``, ``[glance]``), holding keystoneauth session, auth and
adapter options. Imports nothing from Ironic.
"""

import urllib.parse

from keystoneauth1 import loading as ks_loading
import requests

#: option group -> service type, as openstacksdk's ``from_conf`` expects.
SERVICE_TYPES = {
    "placement": "placement",
    "ironic": "baremetal",
    "nova": "compute",
    "glance": "image",
}


def register_client_opts(conf, group):
    """Register keystoneauth session, auth and adapter options in ``group``."""
    ks_loading.register_session_conf_options(conf, group)
    ks_loading.register_auth_conf_options(conf, group)
    ks_loading.register_adapter_conf_options(conf, group)


def list_client_opts(group):
    """The options of one client group, for oslo-config-generator."""
    service_type = SERVICE_TYPES[group]
    opts = (ks_loading.get_session_conf_options()
            + ks_loading.get_auth_common_conf_options()
            + ks_loading.get_auth_plugin_conf_options("password")
            + ks_loading.get_adapter_conf_options(include_deprecated=False))
    for opt in opts:
        if opt.dest == "service_type":
            opt.default = service_type
    # oslo-config-generator rejects duplicate option names within a group.
    unique = {}
    for opt in opts:
        unique.setdefault(opt.dest, opt)
    return list(unique.values())


def connection(conf, group):
    """An openstacksdk connection for the service configured in ``group``.

    :param conf: an oslo.config ConfigOpts with ``group`` registered through
        :func:`register_client_opts`.
    :param group: ``placement``, ``ironic``, ``nova`` or ``glance``.
    :returns: ``openstack.connection.Connection``; use the proxy of the
        service, e.g. ``conn.placement``.
    """
    # NOTE(accel): openstack is imported here, not at module load: it costs
    # about a second, which every agent and API process would otherwise pay
    # at start.
    import openstack
    from openstack.config import cloud_region

    auth = ks_loading.load_auth_from_conf_options(conf, group)
    session = ks_loading.load_session_from_conf_options(conf, group, auth=auth)
    region = cloud_region.from_conf(
        conf, session=session, service_types={SERVICE_TYPES[group]})
    return openstack.connection.Connection(config=region)


class EnvironmentOnceSession(requests.Session):
    """A requests Session reading the environment's proxy and CA bundle
    settings once per scheme and host instead of on every request.

    requests looks them up again for each request (a walk over
    ``os.environ``: a quarter of a small POST's cost); a process's
    environment does not change while it runs, so the answer for a host
    does not either.
    """

    def __init__(self):
        super().__init__()
        self._environment = {}

    def merge_environment_settings(self, url, proxies, stream, verify,
                                   cert):
        if not self.trust_env:
            return super().merge_environment_settings(url, proxies, stream,
                                                      verify, cert)
        parts = urllib.parse.urlsplit(url)
        key = (parts.scheme, parts.netloc,
               tuple(sorted((proxies or {}).items())), stream, verify, cert)
        settings = self._environment.get(key)
        if settings is None:
            settings = super().merge_environment_settings(
                url, proxies, stream, verify, cert)
            self._environment[key] = settings
        return dict(settings, proxies=dict(settings["proxies"]))


def adapter(conf, group):
    """A keystoneauth Adapter for the service configured in ``group``.

    Lighter than :func:`connection` for a process that makes one kind of
    call many times (the API's Nova events): no openstacksdk proxy, the
    environment read once per host (:class:`EnvironmentOnceSession`), the
    same session, auth and adapter options.
    """
    auth = ks_loading.load_auth_from_conf_options(conf, group)
    session = ks_loading.load_session_from_conf_options(
        conf, group, auth=auth, session=EnvironmentOnceSession())
    return ks_loading.load_adapter_from_conf_options(
        conf, group, session=session, auth=auth,
        service_type=conf[group].service_type or SERVICE_TYPES[group])


def is_configured(conf, group):
    """True when ``group`` names a way to reach the service."""
    section = conf[group]
    return bool(section.auth_type or section.endpoint_override)
