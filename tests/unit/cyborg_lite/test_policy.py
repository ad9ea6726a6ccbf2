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


"""Policy defaults (Cyborg's) and the noauth identity."""

from oslo_config import cfg
import pytest

from cyborg_lite import conf as conf_mod
from cyborg_lite import context
from cyborg_lite import exception
from cyborg_lite import policy


@pytest.fixture
def setup():
    conf = cfg.ConfigOpts()
    conf_mod.register_opts(conf)
    conf([], default_config_files=[])
    conf.set_override("auth_strategy", "noauth")
    return conf, policy.make_enforcer(conf)


def _ctx(conf, project="p1", roles="member", service=None):
    environ = {"HTTP_X_PROJECT_ID": project, "HTTP_X_ROLES": roles}
    if service:
        environ["HTTP_X_SERVICE_ROLES"] = service
    return context.from_environ(environ, conf)


@pytest.mark.parametrize("roles, action, allowed", [
    ("member", "cyborg:arq:create", True),
    ("reader", "cyborg:arq:create", False),
    ("reader", "cyborg:arq:get_all", True),
    ("member", "cyborg:device_profile:create", False),
    ("admin", "cyborg:device_profile:create", True),
    ("member", "cyborg:device:get_all", False),
    ("manager", "cyborg:device:get_all", True),
    ("manager", "cyborg:device:disable", False),
    ("service", "cyborg:arq:update", True),
])
def test_defaults(setup, roles, action, allowed):
    conf, enforcer = setup
    ctx = _ctx(conf, roles=roles)
    if allowed:
        policy.authorize(enforcer, action, ctx)
    else:
        with pytest.raises(exception.PolicyNotAuthorized):
            policy.authorize(enforcer, action, ctx)


def test_member_cannot_act_on_another_projects_arq(setup):
    conf, enforcer = setup
    with pytest.raises(exception.PolicyNotAuthorized):
        policy.authorize(enforcer, "cyborg:arq:delete", _ctx(conf),
                         target={"project_id": "p2"})


def test_service_token_roles_decide_service_requests(setup):
    conf, _ = setup
    assert _ctx(conf, service="service").is_service
    assert not _ctx(conf, service="other").is_service
    assert not _ctx(conf).is_service


def test_keystone_is_the_default_strategy():
    conf = cfg.ConfigOpts()
    conf_mod.register_opts(conf)
    conf([], default_config_files=[])
    assert conf.auth_strategy == "keystone"


def test_noauth_without_headers_gets_no_role_by_default(setup):
    conf, enforcer = setup
    ctx = context.from_environ({}, conf)
    assert ctx.roles == [] and not ctx.is_service
    with pytest.raises(exception.PolicyNotAuthorized):
        policy.authorize(enforcer, "cyborg:arq:get_all", ctx)


def test_noauth_without_headers_uses_configured_defaults(setup):
    conf, _ = setup
    conf.set_override("default_roles", ["admin"], group="noauth")
    conf.set_override("default_service_roles", ["service"], group="noauth")
    ctx = context.from_environ({}, conf)
    assert ctx.project_id == "standalone"
    assert "admin" in ctx.roles and ctx.is_service


def test_keystone_strategy_never_invents_an_identity(setup):
    conf, _ = setup
    conf.set_override("auth_strategy", "keystone")
    ctx = context.from_environ({}, conf)
    assert ctx.project_id is None and not ctx.roles and not ctx.is_service


def test_service_roles_are_read_from_keystone_authtoken(setup):
    """One place: keystonemiddleware's option decides, as it does for
    the middleware itself."""
    conf, _ = setup
    conf.set_override("service_token_roles", ["nova-service"],
                      group="keystone_authtoken")
    assert _ctx(conf, service="nova-service").is_service
    assert not _ctx(conf, service="service").is_service


def test_conflicting_deprecated_service_roles_are_refused(setup):
    conf, _ = setup
    conf.set_override("service_token_roles", ["service"], group="api")
    assert _ctx(conf, service="service").is_service  # equal: accepted
    conf.set_override("service_token_roles", ["other"], group="api")
    with pytest.raises(ValueError) as info:
        _ctx(conf, service="service")
    assert "[keystone_authtoken] service_token_roles" in str(info.value)


def test_remembered_decisions_follow_an_edited_policy_file(tmp_path,
                                                           monkeypatch):
    conf = cfg.ConfigOpts()
    conf_mod.register_opts(conf)
    conf([], default_config_files=[])
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text("{}\n")
    policy.make_enforcer(conf)  # registers [oslo_policy]
    conf.set_override("policy_file", str(policy_file), group="oslo_policy")
    enforcer = policy.make_enforcer(conf)
    now = [1000.0]
    monkeypatch.setattr(policy.time, "monotonic", lambda: now[0])
    reader, other = _ctx(conf, roles="reader"), _ctx(conf, project="p2",
                                                     roles="reader")
    policy.authorize(enforcer, "cyborg:arq:get_all", reader)
    policy.authorize(enforcer, "cyborg:arq:get_all", other)
    # Another target is another decision, never a remembered one.
    with pytest.raises(exception.PolicyNotAuthorized):
        policy.authorize(enforcer, "cyborg:arq:get_one", other,
                         target={"project_id": "p1"})

    policy_file.write_text('"cyborg:arq:get_all": "role:admin"\n')
    now[0] += policy.RECHECK_SECONDS / 2
    policy.authorize(enforcer, "cyborg:arq:get_all", reader)
    now[0] += policy.RECHECK_SECONDS
    with pytest.raises(exception.PolicyNotAuthorized):
        policy.authorize(enforcer, "cyborg:arq:get_all", reader)
