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

"""``[cyborg]``: how the plugin reaches cyborg_lite's v2 API.

keystoneauth session, auth and adapter options, as Nova's ``[cyborg]``:
``auth_type = none`` with ``endpoint_override = <cyborg_lite>/v2`` for a
standalone cyborg_lite (noauth), ``auth_type = password`` and the catalog
(service type ``accelerator``) with Keystone. The plugin's Keystone user
needs the ``service`` role (binding needs a service token: its token is sent
as both) and ``manager`` in its project (reading devices and deployables).
"""

from keystoneauth1 import loading as ks_loading

GROUP = "cyborg"
SERVICE_TYPE = "accelerator"


def register_opts(conf):
    """Register ``[cyborg]`` on ``conf``."""
    ks_loading.register_session_conf_options(conf, GROUP)
    ks_loading.register_auth_conf_options(conf, GROUP)
    ks_loading.register_adapter_conf_options(conf, GROUP)
    conf.set_default("service_type", SERVICE_TYPE, group=GROUP)


def list_opts():
    """(group, options) pairs for oslo-config-generator."""
    opts = (ks_loading.get_session_conf_options()
            + ks_loading.get_auth_common_conf_options()
            + ks_loading.get_auth_plugin_conf_options("password")
            + ks_loading.get_adapter_conf_options(include_deprecated=False))
    unique = {}
    for opt in opts:
        if opt.dest == "service_type":
            opt.default = SERVICE_TYPE
        # oslo-config-generator rejects duplicate option names in a group.
        unique.setdefault(opt.dest, opt)
    return [(GROUP, list(unique.values()))]
