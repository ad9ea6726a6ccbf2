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

"""A compute host where real Cyborg ran, in real Placement: what the
adoption tests write there as Cyborg's conductor and Nova did, and read
back; Nova's bind of a new instance on cyborg_lite."""

import uuid

from accel_common.placement import client as placement_client
from accel_tools.embedded import placement
from ironic_accel.placement import reporter
from tests.functional.cyborg_lite.cyborg_import.test_import import NOVA
from tests.functional.cyborg_lite.cyborg_import.test_import import PROJECT
from tests.functional.cyborg_lite.cyborg_import.test_import import resolved


class Host:
    """A new compute node in Placement on ``conn``; a subclass sets
    ``document`` (the host's inventory document) before :meth:`report`."""

    document = None

    def __init__(self, conn):
        self.conn = conn
        self.root, self.host = placement.create_compute_node(conn)

    def call(self, method, url, body=None, ok=(200, 204)):
        """One Placement request that must answer ``ok``; its JSON."""
        response = self.conn.placement.request(
            url, method, json=body, microversion=placement.MICROVERSION)
        assert response.status_code in ok, response.text
        return response.json() if response.content else None

    def cyborg_provider(self, rp_uuid, name, inventories):
        """Cyborg's provider ``name`` under the compute node, with
        ``inventories`` ({resource class: total})."""
        self.call("POST", "/resource_providers", {
            "uuid": rp_uuid, "name": name, "parent_provider_uuid": self.root})
        self.call("PUT", f"/resource_providers/{rp_uuid}/inventories",
                  {"resource_provider_generation": 0,
                   "inventories": {rc: {"total": total}
                                   for rc, total in inventories.items()}})

    def allocate(self, instance, rp_uuid, resources):
        """Nova's allocation of ``resources`` on ``rp_uuid`` for
        ``instance``."""
        self.call("PUT", f"/allocations/{instance}", {
            "allocations": {rp_uuid: {"resources": resources}},
            "project_id": PROJECT, "user_id": "nova",
            "consumer_generation": None, "consumer_type": "INSTANCE"})

    def allocations(self, instance):
        """``{rp uuid: resources}`` of ``instance``."""
        body = self.call("GET", f"/allocations/{instance}")
        return {rp: a["resources"] for rp, a in body["allocations"].items()}

    def report(self):
        """The Ironic reporter's report of the document (a new client, as
        a restarted conductor)."""
        return reporter.report(placement_client.Client(self.conn),
                               self.document)


def bind_as_nova(lite, profile, rp_uuid, host):
    """Nova's create and bind of a new instance's ARQ of ``profile`` on
    ``lite`` (a :func:`tests.fixtures.cyborg.make_cyborg`);
    ``(instance, the ARQ once resolved)``."""
    response = lite.client.post("/v2/accelerator_requests", headers=NOVA,
                                json={"device_profile_name": profile})
    assert response.status_code == 201, response.get_data(as_text=True)
    arq = response.get_json()["arqs"][0]["uuid"]
    instance = str(uuid.uuid4())
    lite.client.patch("/v2/accelerator_requests", headers=NOVA, json={
        arq: [{"op": "add", "path": "/hostname", "value": host},
              {"op": "add", "path": "/device_rp_uuid", "value": rp_uuid},
              {"op": "add", "path": "/instance_uuid", "value": instance}]})
    return instance, resolved(lite, instance)[arq]
