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


"""Policy defaults (Cyborg's own, see doc/source/reference/policy.rst),
published through the ``oslo.policy.policies`` entry point for
oslopolicy-sample-generator; :mod:`cyborg_lite.policy` enforces them.

The hard service-token checks (bind, unbind, delete-by-instance, deleting a
bound ARQ) are not policy: they live in the ARQ handlers, as in real Cyborg,
so no policy file can switch them off.
"""

from oslo_policy import policy

ADMIN = "rule:admin_api"
MEMBER_OR_SERVICE = "rule:project_member_or_service"
READER_OR_ADMIN = "rule:project_reader_or_admin"
MANAGER_OR_ADMIN = "rule:project_manager_or_admin"

base_rules = [
    policy.RuleDefault("admin_api", "role:admin",
                       description="An administrator."),
    policy.RuleDefault(
        "project_member_or_service",
        "(role:member and project_id:%(project_id)s) or role:service",
        description="A member of the owning project, or a service user."),
    policy.RuleDefault(
        "project_reader_or_admin",
        "(role:reader and project_id:%(project_id)s) or role:admin",
        description="A reader of the owning project, or an administrator."),
    policy.RuleDefault(
        "project_manager_or_admin",
        "(role:manager and project_id:%(project_id)s) or role:admin",
        description="A manager of the project, or an administrator."),
]


def _op(name, check_str, description, operations):
    return policy.DocumentedRuleDefault(
        name=name, check_str=check_str, description=description,
        operations=[{"method": m, "path": p} for m, p in operations],
        scope_types=["project"])


_ARQS = "/v2/accelerator_requests"
_DPS = "/v2/device_profiles"

arq_rules = [
    _op("cyborg:arq:get_all", READER_OR_ADMIN, "List accelerator requests.",
        [("GET", _ARQS)]),
    _op("cyborg:arq:get_one", READER_OR_ADMIN,
        "Show an accelerator request.", [("GET", _ARQS + "/{arq_uuid}")]),
    _op("cyborg:arq:create", MEMBER_OR_SERVICE,
        "Create accelerator requests.", [("POST", _ARQS)]),
    _op("cyborg:arq:update", MEMBER_OR_SERVICE,
        "Bind or unbind accelerator requests (also needs a service token).",
        [("PATCH", _ARQS), ("PATCH", _ARQS + "/{arq_uuid}")]),
    _op("cyborg:arq:delete", MEMBER_OR_SERVICE,
        "Delete accelerator requests (by instance, or bound ones, also "
        "needs a service token).",
        [("DELETE", _ARQS), ("DELETE", _ARQS + "/{arq_uuid}")]),
]

device_profile_rules = [
    _op("cyborg:device_profile:get_all", READER_OR_ADMIN,
        "List device profiles.", [("GET", _DPS)]),
    _op("cyborg:device_profile:get_one", READER_OR_ADMIN,
        "Show a device profile.", [("GET", _DPS + "/{uuid_or_name}")]),
    _op("cyborg:device_profile:create", ADMIN, "Create a device profile.",
        [("POST", _DPS)]),
    _op("cyborg:device_profile:delete", ADMIN, "Delete device profiles.",
        [("DELETE", _DPS + "/{uuid_or_names}")]),
]

device_rules = [
    _op("cyborg:device:get_all", MANAGER_OR_ADMIN, "List devices.",
        [("GET", "/v2/devices")]),
    _op("cyborg:device:get_one", MANAGER_OR_ADMIN, "Show a device.",
        [("GET", "/v2/devices/{uuid}")]),
    _op("cyborg:device:enable", ADMIN,
        "Enable a device (Placement reserved back to 0).",
        [("POST", "/v2/devices/{uuid}/enable")]),
    _op("cyborg:device:disable", ADMIN,
        "Disable a device (no new binds; Placement reserved = total).",
        [("POST", "/v2/devices/{uuid}/disable")]),
]

deployable_rules = [
    _op("cyborg:deployable:get_all", MANAGER_OR_ADMIN, "List deployables.",
        [("GET", "/v2/deployables")]),
    _op("cyborg:deployable:get_one", MANAGER_OR_ADMIN, "Show a deployable.",
        [("GET", "/v2/deployables/{uuid}")]),
    _op("cyborg:deployable:program", ADMIN, "Program a deployable.",
        [("PATCH", "/v2/deployables/{uuid}/program")]),
]

_ATTRS = "/v2/attributes"

attribute_rules = [
    _op("cyborg:attribute:get_all", MANAGER_OR_ADMIN, "List attributes.",
        [("GET", _ATTRS)]),
    _op("cyborg:attribute:get_one", MANAGER_OR_ADMIN, "Show an attribute.",
        [("GET", _ATTRS + "/{uuid}")]),
    _op("cyborg:attribute:create", ADMIN,
        "Add an attribute to a deployable.", [("POST", _ATTRS)]),
    _op("cyborg:attribute:delete", ADMIN, "Delete an attribute.",
        [("DELETE", _ATTRS + "/{uuid}")]),
]


health_rules = [
    _op("cyborg:healthcheck:detail", ADMIN,
        "See the detailed health check (database, schema revisions, the "
        "agent transport's broker, the last inventory sync); everyone gets "
        "the verdict.", [("GET", "/healthcheck")]),
    _op("cyborg:metrics:get", ADMIN,
        "Scrape the Prometheus metrics; clients in [metrics] "
        "allowed_source_ranges need no token.", [("GET", "/metrics")]),
]


def list_rules():
    """Every policy default of cyborg_lite."""
    return (base_rules + arq_rules + device_profile_rules + device_rules
            + deployable_rules + attribute_rules + health_rules)
