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

"""The settings of a standalone cyborg_lite: one host, no Keystone, no
message broker, simulated devices.

cyborg_lite's shipped defaults are those of a deployment (Keystone, a
broker, no driver until the deployer names the host's). The demo, the
tests and the benchmarks run the standalone way and say so here, in one
place, instead of relying on defaults (see doc/source/admin/security.rst).
"""

#: ``{section: {option: value}}``: trust identity headers and give a
#: request without any the roles of an operator, run the agent inside the
#: API process on the in-process transport with the ``sim`` driver.
from accel_tools.embedded import common

SETTINGS = {
    "DEFAULT": {"auth_strategy": "noauth", "transport_url": "fake://"},
    "noauth": {"default_roles": ["admin", "member", "reader"],
               "default_service_roles": ["service"]},
    "programming": {"embedded_agent": True},
    "agent": {"enabled_drivers": ["sim"]},
}


def apply(conf):
    """Override ``conf`` (a cyborg_lite ConfigOpts) with :data:`SETTINGS`."""
    for section, values in SETTINGS.items():
        group = None if section == "DEFAULT" else section
        for name, value in values.items():
            conf.set_override(name, value, group=group)


def ini_sections():
    """:data:`SETTINGS` as configuration-file text values
    (``{section: {option: "a,b"}}``)."""
    return {section: {name: (",".join(value) if isinstance(value, list)
                             else str(value))
                      for name, value in values.items()}
            for section, values in SETTINGS.items()}


def ini_text():
    """:data:`SETTINGS` as configuration-file text, to append to a file
    (oslo.config merges a section given twice)."""
    return common.ini(ini_sections())
