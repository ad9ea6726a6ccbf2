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


"""Policy enforcement with oslo.policy."""

from oslo_config import cfg
from oslo_policy import policy

from cyborg_lite import exception
from cyborg_lite import policies


def make_enforcer(conf):
    """An Enforcer for ``conf`` with cyborg_lite's defaults registered."""
    enforcer = policy.Enforcer(conf)
    enforcer.register_defaults(policies.list_rules())
    return enforcer


def get_enforcer():
    """Entry point for oslopolicy-policy-generator and friends."""
    conf = cfg.ConfigOpts()
    conf([], project="cyborg_lite")
    return make_enforcer(conf)


def authorize(enforcer, action, context, target=None):
    """Check ``action`` for ``context``.

    :param target: the object's attributes; defaults to the caller's own
        project, so project-scoped rules apply to what the caller owns.
    :raises PolicyNotAuthorized:
    """
    if target is None:
        target = {"project_id": context.project_id}
    creds = context.to_policy_values()
    if not enforcer.authorize(action, target, creds, do_raise=False):
        raise exception.PolicyNotAuthorized(action=action)
