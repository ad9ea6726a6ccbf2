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

"""Helpers of the programming tests: an API with its programmer and agent,
and Nova's side of a bind, over the real HTTP API (in-process or served)."""

import contextlib
import datetime
import json
import time
import uuid

import openstack
import requests
import sqlalchemy as sa

from accel_common.placement import client as placement_client
from accel_tools.embedded import common
from accel_tools.embedded import placement as embedded_placement
from cyborg_lite.agent.drivers import sim
from cyborg_lite.db import deployables as deployable_db
from cyborg_lite.db import models
from ironic_accel.placement import reporter
from tests.fixtures import placement as placement_fixture
from tests.unit.cyborg_lite.agent.test_images import write_catalog

#: Nova acting for a user (user token + service token), and an admin.
NOVA = {"X-Project-Id": "p1", "X-User-Id": "nova", "X-Roles": "member",
        "X-Service-Roles": "service"}
ADMIN = {"X-Project-Id": "admin-project", "X-User-Id": "admin",
         "X-Roles": "admin"}

#: functions the test image catalog offers (id, function, content).
CATALOG = [("img-nlb0", "nlb0", b"nlb0 bits"),
           ("img-nlb3", "nlb3", b"nlb3 bits"),
           ("img-gzip", "gzip", b"gzip bits")]


def make_catalog(directory):
    """The standalone image catalog of :data:`CATALOG`."""
    write_catalog(directory, [(i, f, c, None) for i, f, c in CATALOG])
    return str(directory)


def write_document(path, document):
    """Write an inventory document; returns its path as a string."""
    path.write_text(json.dumps(document))
    return str(path)


def single_mode(document):
    """``document`` with its first device made ``program_mode: single``."""
    document["devices"][0]["program_mode"] = "single"
    return document


class Client:
    """Nova's and an admin's calls, against a Flask test client or a URL.

    :param target: a Flask app (test client used) or a base URL.
    """

    def __init__(self, target):
        if isinstance(target, str):
            self._session = requests.Session()
            self._base = target
            self._flask = None
        else:
            self._flask = target.test_client()

    def call(self, method, path, headers, json=None):
        """One request; returns ``(status, JSON or None)``."""
        if self._flask is not None:
            response = self._flask.open(path, method=method,
                                        headers=headers, json=json)
            body = response.get_json(silent=True)
            # NOTE(programming): closing runs call_on_close, where the API
            # queues Nova events of instant binds, as a WSGI server would.
            response.close()
            return response.status_code, body
        response = self._session.request(method, self._base + path,
                                         headers=headers, json=json,
                                         timeout=60)
        try:
            body = response.json()
        except ValueError:
            body = None
        return response.status_code, body

    def profile(self, function_id=None, amount=1, bitstream_id=None):
        """A device profile asking for ``function_id``; returns its name."""
        group = {"resources:FPGA": str(amount)}
        if function_id:
            group["accel:function_id"] = function_id
        if bitstream_id:
            group["accel:bitstream_id"] = bitstream_id
        name = f"dp-{uuid.uuid4().hex[:10]}"
        status, body = self.call("POST", "/v2/device_profiles", ADMIN,
                                 [{"name": name, "groups": [group]}])
        assert status == 201, body
        return name

    def arqs(self, profile):
        """Create the ARQs of ``profile``; returns their uuids."""
        status, body = self.call("POST", "/v2/accelerator_requests", NOVA,
                                 {"device_profile_name": profile})
        assert status == 201, body
        return [a["uuid"] for a in body["arqs"]]

    def bind(self, arqs, rp_uuid, instance, host):
        """Nova's bind PATCH; returns ``(status, body)``."""
        body = {arq: [{"op": "add", "path": "/hostname", "value": host},
                      {"op": "add", "path": "/device_rp_uuid",
                       "value": rp_uuid},
                      {"op": "add", "path": "/instance_uuid",
                       "value": instance}] for arq in arqs}
        return self.call("PATCH", "/v2/accelerator_requests", NOVA, body)

    def unbind(self, arqs):
        body = {arq: [{"op": "remove", "path": p} for p in
                      ("/hostname", "/device_rp_uuid", "/instance_uuid")]
                for arq in arqs}
        return self.call("PATCH", "/v2/accelerator_requests", NOVA, body)

    def arq(self, arq_uuid):
        status, body = self.call("GET", f"/v2/accelerator_requests/"
                                        f"{arq_uuid}", NOVA)
        assert status == 200, body
        return body

    def wait_resolved(self, arq_uuid, timeout=30):
        """Poll until the ARQ left ``BindStarted``; returns it."""
        deadline = time.monotonic() + timeout
        while True:
            arq = self.arq(arq_uuid)
            if arq["state"] != "BindStarted":
                return arq
            assert time.monotonic() < deadline, f"{arq_uuid} stuck: {arq}"
            time.sleep(0.05)

    def deployable(self, rp_uuid):
        status, body = self.call("GET", f"/v2/deployables?rp_uuid={rp_uuid}",
                                 ADMIN)
        assert status == 200, body
        (found,) = body["deployables"]
        return found

    def program(self, deployable_uuid, op="replace", value=None,
                headers=ADMIN):
        body = [{"path": "/program", "op": op}]
        if value is not None:
            body[0]["value"] = [value]
        return self.call("PATCH", f"/v2/deployables/{deployable_uuid}/"
                                  f"program", headers, body)


def region_row(db, rp_uuid):
    """The deployable row of a region (state, function, last_error)."""
    return db.run(lambda s: deployable_db.by_rp(s, rp_uuid))


def expire_routing(db):
    """Let every routed lookup and kept region run out now, as
    ``[scheduling] lookup_lease`` seconds later."""
    def _run(session):
        session.execute(sa.update(models.Deployable).values(
            assigned_until=models.utcnow() - datetime.timedelta(seconds=1)))
        session.execute(sa.delete(models.SchedulingLookup))
    db.run(_run)


def sim_region(state_dir, pci_address, region_id="0"):
    """A simulated region's state as the sim driver keeps it."""
    device = sim.read_state(state_dir)[pci_address]
    return next(r for r in device["regions"] if r["id"] == region_id)


def report_to_placement(api, placement_server, conn):
    """Point ``api`` at the real Placement, give its host a compute node
    there and report its document as the conductor would.

    :returns: a :class:`accel_common.placement.client.Client` on ``conn``.
    """
    embedded_placement.apply_client_conf(api.conf, "placement",
                                        placement_server.url)
    placement_fixture.create_compute_node(conn, name=api.host)
    client = placement_client.Client(conn)
    reporter.report(client, api.document)
    return client


@contextlib.contextmanager
def placement_unreachable(api):
    """Point the API's Placement client (the programmer's, shared by the
    lock traits and the sibling moves) at a port nobody listens on, and
    back at the real Placement when the block ends."""
    client = api.programmer.providers.client()
    live = client.conn
    client.conn = openstack.connect(
        auth_type="admin_token",
        auth={"token": "admin",
              "endpoint": f"http://127.0.0.1:{common.free_port()}"})
    try:
        yield
    finally:
        client.conn.close()
        client.conn = live
