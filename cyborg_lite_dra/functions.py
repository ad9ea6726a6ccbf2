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

"""What Placement says of each region's provider (see
:mod:`cyborg_lite_dra.conf.placement`): the function it runs (its
``CUSTOM_FPGA_FUNCTION_ID_*`` trait) and whether its device is gone (the
reporter's ``CUSTOM_ACCEL_RETIRED``)."""

import logging

from accel_common import clients
from accel_common import exception as accel_exception
from accel_common import inventory
from accel_common.placement import client as placement_client
from accel_common.placement import tree

#: The trait of a provider whose device vanished while still in use.
RETIRED_TRAIT = tree.RETIRED_TRAIT


def function_of(traits):
    """The function trait among ``traits``, or None."""
    functions = sorted(t for t in traits
                       if t.startswith(inventory.FUNCTION_TRAIT_PREFIX))
    return functions[0] if functions else None

LOG = logging.getLogger(__name__)


class FunctionTraits:
    """Reads region providers' traits.

    :param conf: the plugin's ConfigOpts; ``[placement]`` configured.
    """

    def __init__(self, conf):
        self._conf = conf
        self._client = None

    def __call__(self, rp_uuids):
        """``{rp uuid: frozenset of traits}`` of the providers Placement
        has.

        A provider Placement does not have (not reported yet) or a
        Placement that does not answer gives no traits: the slice is
        published without what they say, and the next round tries again.
        """
        found = {}
        if self._client is None:
            try:
                self._client = placement_client.Client(
                    clients.connection(self._conf, "placement"))
            except Exception as error:
                # NOTE(dra): a wrong [placement] costs the function
                # attribute, not the slices.
                LOG.warning("Cannot reach Placement: %s", error)
                return found
        for rp_uuid in rp_uuids:
            try:
                _, traits = self._client.traits(rp_uuid)
            except accel_exception.PlacementError as error:
                LOG.debug("No traits for %s: %s", rp_uuid, error)
                continue
            except Exception as error:
                LOG.warning("Reading the traits of %s: %s", rp_uuid, error)
                return found
            found[rp_uuid] = frozenset(traits)
        return found
