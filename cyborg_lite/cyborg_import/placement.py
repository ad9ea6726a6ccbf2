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

"""Check an import plan against Placement; never writes there.

The import keeps Cyborg's providers: their inventory and Nova's
allocations stay as they are. When ``[placement]`` is configured, the
report says, per imported deployable, whether its provider exists and
whether what is allocated on it matches the ``Bound`` ARQs holding its
handles, so a lost or doubled allocation is seen before the switch.
"""

import collections

from keystoneauth1 import exceptions as ks_exceptions

from accel_common import exception as common_exception
from cyborg_lite import arq_states as states


def check(client, plan):
    """Lines about the providers of ``plan``'s deployables."""
    bound = collections.Counter(
        arq["deployable_uuid"] for arq in plan.rows["accelerator_requests"]
        if arq["state"] == states.BOUND)
    lines = []
    matching = 0
    for dep in plan.rows["deployables"]:
        what = f"deployable {dep['name']} ({dep['uuid']})"
        rp_uuid, rc = dep["rp_uuid"], dep["resource_class"]
        try:
            if client.provider(rp_uuid) is None:
                lines.append(f"{what}: its provider {rp_uuid} is not in "
                             "Placement; Nova cannot schedule to it, its "
                             "bound ARQs keep working")
                continue
            used = client.usages(rp_uuid).get(rc, 0)
        except (common_exception.PlacementError,
                ks_exceptions.ClientException) as error:
            return lines + [f"Placement not checked: {error}"]
        if used != bound[dep["uuid"]]:
            lines.append(
                f"{what}: Placement holds {used} {rc} allocated on "
                f"provider {rp_uuid}, {bound[dep['uuid']]} Bound ARQ(s) "
                "hold its handles; allocations are Nova's and left as "
                "they are")
        else:
            matching += 1
    if matching:
        lines.append(f"{matching} provider(s) hold exactly the allocations "
                     "of their Bound ARQs; kept as they are")
    return lines
