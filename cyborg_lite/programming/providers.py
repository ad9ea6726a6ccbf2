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

"""What cyborg_lite owns on a region's resource provider (the table "Who
owns what in Placement" of doc/source/architecture.rst):
``reserved`` while it programs the region, and its
``CUSTOM_FPGA_FUNCTION_ID_*`` trait.

Every write is generation-checked and retried on
``placement.concurrent_update`` (the reporter of ironic_accel writes the
same providers). A provider Placement does not know (standalone
inventories) is skipped with a log line. With ``[placement]`` unconfigured
every call is a no-op.
"""

import threading

from oslo_log import log as logging

from accel_common import clients
from accel_common import exception as common_exception
from accel_common import inventory
from accel_common.placement import client as placement_client

LOG = logging.getLogger(__name__)


class RegionProviders:
    """Reserve/restore a region's inventory and set its function trait.

    :param conf: ConfigOpts with the ``[placement]`` client options.
    :param retries: attempts after a generation conflict.
    """

    def __init__(self, conf, retries=5, client=None):
        self.conf = conf
        self.retries = retries
        self._client = client
        self._lock = threading.Lock()

    @property
    def enabled(self):
        """True when Placement is part of the deployment."""
        return self._client is not None or clients.is_configured(
            self.conf, "placement")

    def client(self):
        """The shared :class:`accel_common.placement.client.Client`."""
        with self._lock:
            if self._client is None:
                self._client = placement_client.Client(
                    clients.connection(self.conf, "placement"))
            return self._client

    def _retrying(self, rp_uuid, what, func):
        """``func()`` retried after generation conflicts; None when the
        provider is not in Placement.

        :raises accel_common.exception.PlacementError: the last
            conflict once ``retries`` retries met one too, or any other
            refusal.
        """
        try:
            return self.client().retry_on_conflict(
                func, self.retries, rp_uuid, what,
                gave_up=lambda conflict: conflict)
        except common_exception.PlacementError as error:
            if error.status != 404:
                raise
            LOG.warning("Resource provider %s is not in Placement; not %s",
                        rp_uuid, what)
            return None

    @staticmethod
    def _moved_on(rp_uuid, still_wanted):
        if still_wanted is None or still_wanted():
            return False
        LOG.debug("Resource provider %s not written: its region moved on",
                  rp_uuid)
        return True

    def reserve(self, rp_uuid, reserve=True, still_wanted=None):
        """Set ``reserved = total`` (or 0) on every class of the provider,
        so no new allocation lands there while it is programmed.

        :param still_wanted: asked after reading the provider, right before
            writing it; when it answers False nothing is written (see
            :meth:`set_function_trait`).
        :returns: the provider's generation, or None when nothing was
            written because it is not in Placement or not ``still_wanted``.
        """
        if not self.enabled:
            return None
        client = self.client()

        def _apply():
            generation, inventories = client.inventories(rp_uuid)
            wanted = {}
            for rc, inv in inventories.items():
                inv = dict(inv)
                inv["reserved"] = inv["total"] if reserve else 0
                wanted[rc] = inv
            if wanted == inventories:
                return generation
            if self._moved_on(rp_uuid, still_wanted):
                return None
            return client.set_inventories(rp_uuid, generation, wanted)

        return self._retrying(rp_uuid, "reserving" if reserve
                              else "restoring", _apply)

    def restore(self, rp_uuid, still_wanted=None):
        """Set ``reserved = 0`` again after programming."""
        return self.reserve(rp_uuid, reserve=False,
                            still_wanted=still_wanted)

    def set_function_trait(self, rp_uuid, trait, still_wanted=None):
        """Replace the provider's function traits with ``trait`` (or with
        nothing when ``trait`` is None), keeping every other trait.

        :param still_wanted: asked after reading the provider, right before
            writing it; when it answers False nothing is written. A writer
            that acts after ``still_wanted`` answered True changes the
            provider's generation, so this write, checked against the
            generation read before asking, cannot land over its work.
        :returns: as :meth:`reserve`.
        """
        return self._replace_traits(rp_uuid, inventory.FUNCTION_TRAIT_PREFIX,
                                    trait, "setting the function trait",
                                    still_wanted)

    def set_lock_trait(self, rp_uuid, wanted):
        """Replace the provider's lock trait
        (``CUSTOM_ACCEL_LOCKED_*``) with the one ``wanted()`` names.

        ``wanted`` is asked after the provider was read, so a lock state
        that changed before this write is the one written, and one that
        changes after it makes a later call of its own (see
        :mod:`~cyborg_lite.scheduling.locks`).

        :param wanted: callable answering the trait, or None for none.
        :returns: as :meth:`reserve`.
        """
        return self._replace_traits(rp_uuid, inventory.LOCK_TRAIT_PREFIX,
                                    wanted, "setting the lock trait")

    def _replace_traits(self, rp_uuid, prefix, trait, what,
                        still_wanted=None):
        """Replace the provider's traits starting with ``prefix`` by
        ``trait`` (a name, None, or a callable asked after the read)."""
        if not self.enabled:
            return None
        client = self.client()

        def _apply():
            generation, traits = client.traits(rp_uuid)
            wanted = {t for t in traits if not t.startswith(prefix)}
            name = trait() if callable(trait) else trait
            if name:
                wanted.add(name)
            if wanted == traits:
                return generation
            if self._moved_on(rp_uuid, still_wanted):
                return None
            return client.set_traits(rp_uuid, generation, wanted)

        return self._retrying(rp_uuid, what, _apply)

    def traits(self, rp_uuid):
        """The provider's traits (for status and tests)."""
        return self.client().traits(rp_uuid)[1]
