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

import time

from oslo_config import cfg
from oslo_policy import policy

from cyborg_lite import exception
from cyborg_lite import policies

#: how often (seconds) the policy file is looked at for changes.
RECHECK_SECONDS = 1.0

#: decisions remembered; the oldest half is dropped when full.
MAX_DECISIONS = 4096


def _frozen(values):
    """A hashable form of a target or credentials dict."""
    return tuple(sorted(
        (key, tuple(value) if isinstance(value, list) else value)
        for key, value in values.items()))


class Enforcer(policy.Enforcer):
    """oslo.policy's Enforcer, remembering its decisions.

    A decision depends only on the rules, the target and the credentials:
    it is kept until the rules change. oslo.policy looks at the policy file
    (a ``stat``) and walks the rule's checks (each one inspecting its
    callee's signature) on every check, about 1 ms of every request; here
    the file is looked at once per :data:`RECHECK_SECONDS`, so an edited
    policy file still takes effect within a second, without a restart.
    """

    def __init__(self, *args, **kwargs):
        self._next_check = 0.0
        self._decisions = {}
        self._decided_with = None
        super().__init__(*args, **kwargs)

    def load_rules(self, force_reload=False):
        now = time.monotonic()
        if force_reload or now >= self._next_check:
            super().load_rules(force_reload)
            self._next_check = now + RECHECK_SECONDS

    def clear(self):
        super().clear()
        self._decisions = {}
        self._next_check = 0.0

    def decide(self, action, target, creds):
        """``authorize(action, target, creds, do_raise=False)``,
        remembered."""
        try:
            key = (action, _frozen(target), _frozen(creds))
        except TypeError:  # NOTE(cyborg_lite): a value that is not hashable
            return self.authorize(action, target, creds, do_raise=False)
        self.load_rules()
        if self.rules is not self._decided_with:
            self._decisions = {}
            self._decided_with = self.rules
        decision = self._decisions.get(key)
        if decision is None:
            decision = bool(self.authorize(action, target, creds,
                                           do_raise=False))
            if len(self._decisions) >= MAX_DECISIONS:
                for old in list(self._decisions)[:MAX_DECISIONS // 2]:
                    del self._decisions[old]
            self._decisions[key] = decision
        return decision


def make_enforcer(conf):
    """An Enforcer for ``conf`` with cyborg_lite's defaults registered."""
    enforcer = Enforcer(conf)
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
    if not enforcer.decide(action, target, creds):
        raise exception.PolicyNotAuthorized(action=action)
