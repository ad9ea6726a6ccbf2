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

"""Device profile groups as the Placement request groups Nova builds.

Mirrors Nova 34 (``nova.accelerator.cyborg.get_device_profile_request_groups``
and ``nova.scheduler.utils.ResourceRequest.to_querystring``): group *i*
becomes the numbered group with suffix ``device_profile_<i>``; its
``resources:<RC>`` keys become resources (classes neither standard nor
``CUSTOM_`` and amounts that are not non-negative integers are dropped,
zero amounts stripped), its ``trait:<T>`` keys required or forbidden
traits (other values dropped), ``accel:`` keys are skipped. The query
string is sorted as Nova sorts it. Used to check what Nova will get from
``GET /allocation_candidates`` for a profile, and by tests.
"""

import dataclasses
import re
from urllib import parse

import os_resource_classes as orc
from oslo_log import log as logging

LOG = logging.getLogger(__name__)

#: Nova's ``ResourceRequest.XS_KEYPAT`` (prefix, optional suffix, name).
_KEY = re.compile(r"^(resources|trait)([a-zA-Z0-9_-]{1,64})?:(.*)$")

#: Placement microversion whose syntax the query uses (string suffixes
#: need 1.33, ``root_required`` 1.35).
MICROVERSION = "1.39"


def requester_id(group_index):
    """``device_profile_<i>``: Nova's requester id and query suffix."""
    return f"device_profile_{group_index}"


@dataclasses.dataclass
class RequestGroup:
    """One numbered request group (``use_same_provider``)."""

    requester_id: str
    resources: dict = dataclasses.field(default_factory=dict)
    required_traits: set = dataclasses.field(default_factory=set)
    forbidden_traits: set = dataclasses.field(default_factory=set)

    def is_empty(self):
        """Nova drops groups with neither resources nor traits."""
        return not (self.resources or self.required_traits
                    or self.forbidden_traits)

    def to_queryparams(self):
        """``[(name, value)]`` for this group, as Nova renders them."""
        suffix = self.requester_id
        params = [(f"resources{suffix}", ",".join(
            sorted(f"{rc}:{amount}" for rc, amount in self.resources.items())
        ))]
        required = (sorted(self.required_traits)
                    + [f"!{t}" for t in sorted(self.forbidden_traits)])
        if required:
            params.append((f"required{suffix}", ",".join(required)))
        return params


def _add_resource(group, rclass, amount):
    rclass = rclass.strip()
    if not (rclass in orc.STANDARDS or orc.is_custom(rclass)):
        LOG.warning("Ignoring invalid resource class %r in %s", rclass,
                    group.requester_id)
        return
    try:
        amount = int(amount)
        if amount < 0:
            raise ValueError(amount)
    except (TypeError, ValueError):
        LOG.warning("Ignoring invalid amount %r of %s in %s", amount, rclass,
                    group.requester_id)
        return
    group.resources[rclass] = amount


def _add_trait(group, name, value):
    if value == "required":
        group.required_traits.add(name)
    elif value == "forbidden":
        group.forbidden_traits.add(name)
    else:
        LOG.warning("Ignoring trait %s with value %r (not required or "
                    "forbidden) in %s", name, value, group.requester_id)


def request_groups(groups):
    """The request groups Nova builds from a device profile's ``groups``.

    :param groups: the profile's ``groups``: a list of dicts of strings.
    :raises ValueError: when ``groups`` is not a list of dicts.
    :returns: a list of :class:`RequestGroup`, one per profile group, zero
        amounts already stripped (empty groups stay, so indexes match ARQ
        ``device_profile_group_id``; :func:`query_params` skips them).
    """
    if not isinstance(groups, list) or not all(
            isinstance(g, dict) for g in groups):
        raise ValueError("device profile groups must be a list of objects")
    result = []
    for index, dp_group in enumerate(groups):
        group = RequestGroup(requester_id(index))
        for key, value in dp_group.items():
            match = _KEY.match(key)
            if not match:
                continue  # NOTE(accel): accel:* keys are Cyborg's own.
            prefix, _suffix, name = match.groups()
            if prefix == "resources":
                _add_resource(group, name, value)
            else:
                _add_trait(group, name, value)
        group.resources = {rc: n for rc, n in group.resources.items() if n}
        result.append(group)
    return result


def query_params(groups, group_policy=None, root_required=(), limit=None,
                 unnumbered_resources=None):
    """``GET /allocation_candidates`` parameters for a device profile.

    :param groups: the profile's ``groups``.
    :param group_policy: the flavor's ``group_policy`` (``none`` or
        ``isolate``); Placement insists on one when there are several
        numbered groups, as it does for Nova.
    :param root_required: traits the root (compute) provider must have;
        Nova adds ``COMPUTE_ACCELERATORS`` for a flavor with a profile.
    :param limit: Nova's ``[scheduler] max_placement_results``.
    :param unnumbered_resources: the flavor's own resources, e.g.
        ``{"VCPU": 1}``, as the unsuffixed group.
    :returns: a sorted list of ``(name, value)`` pairs.
    """
    params = []
    if limit is not None:
        params.append(("limit", limit))
    if group_policy is not None:
        params.append(("group_policy", group_policy))
    if root_required:
        params.append(("root_required", ",".join(sorted(root_required))))
    if unnumbered_resources:
        params.append(("resources", ",".join(
            sorted(f"{rc}:{n}" for rc, n in unnumbered_resources.items()))))
    for group in request_groups(groups):
        if not group.is_empty():
            params.extend(group.to_queryparams())
    return sorted(params)


def querystring(groups, **kwargs):
    """:func:`query_params` url-encoded, exactly as Nova sends it."""
    return parse.urlencode(query_params(groups, **kwargs))
