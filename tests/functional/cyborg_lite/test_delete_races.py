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

"""Deletes racing other requests, on sqlite, MariaDB and PostgreSQL: the
database settles each race and the API says how (one 204, 404 or 409 for
the others), never 500.

Requests run in threads through the app, each thread with its own client,
so they share the engine's pool and meet in the database as the requests
of one API worker's threads (or of several workers) do.
"""

import collections
import json
import threading

from tests.fixtures.cyborg import ADMIN
from tests.fixtures.cyborg import NOVA

ROUNDS = 8


def _at_once(app, calls):
    """Run ``calls`` (each ``call(client) -> response``) together;
    returns their responses in order."""
    barrier = threading.Barrier(len(calls))
    results = [None] * len(calls)

    def run(index, call):
        client = app.test_client()
        barrier.wait()
        results[index] = call(client)

    threads = [threading.Thread(target=run, args=(i, call))
               for i, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def _message(response):
    return json.loads(response.get_json()["error_message"])["faultstring"]


def test_concurrent_deletes_of_one_arq_give_one_204(cyborg_on_each_db):
    cyborg = cyborg_on_each_db
    profile = cyborg.create_profile([{"resources:FPGA": "1"}])
    statuses = collections.Counter()
    for _ in range(ROUNDS):
        arq = cyborg.create_arqs(profile["name"])[0]["uuid"]
        answers = _at_once(cyborg.app, [
            lambda c, arq=arq: c.delete(f"/v2/accelerator_requests/{arq}",
                                        headers=NOVA)] * 4)
        codes = sorted(r.status_code for r in answers)
        assert codes == [204, 404, 404, 404], [
            (r.status_code, r.get_data(as_text=True)) for r in answers]
        statuses.update(codes)
        assert cyborg.client.get(f"/v2/accelerator_requests/{arq}",
                                 headers=NOVA).status_code == 404
    assert statuses == {204: ROUNDS, 404: 3 * ROUNDS}


def test_profile_deleted_while_arqs_are_created_is_409_in_use(
        cyborg_on_each_db):
    cyborg = cyborg_on_each_db
    seen = collections.Counter()
    for _ in range(ROUNDS):
        profile = cyborg.create_profile([{"resources:FPGA": "1"}])
        name = profile["name"]

        def create(client, name=name):
            return client.post("/v2/accelerator_requests", headers=NOVA,
                               json={"device_profile_name": name})

        def delete(client, uuid=profile["uuid"]):
            return client.delete(f"/v2/device_profiles/{uuid}",
                                 headers=ADMIN)

        *creates, deleted = _at_once(cyborg.app, [create] * 4 + [delete])
        for response in creates:
            assert response.status_code in (201, 404, 409), (
                response.status_code, response.get_data(as_text=True))
            seen[f"create {response.status_code}"] += 1
        created = sum(r.status_code == 201 for r in creates)
        seen[f"delete {deleted.status_code}"] += 1
        if deleted.status_code == 204:
            # Every ARQ that got in before the delete would have blocked
            # it: none did.
            assert created == 0, [r.get_json() for r in creates]
            for response in creates:
                if response.status_code == 409:
                    assert "was deleted meanwhile" in _message(response)
        else:
            assert deleted.status_code == 409, deleted.get_data(as_text=True)
            message = _message(deleted)
            assert message.startswith(f"Device profile {name} is used by ")
            assert created >= 1
        listed = cyborg.client.get("/v2/accelerator_requests",
                                   headers=NOVA).get_json()["arqs"]
        assert sum(a["device_profile_name"] == name for a in listed) == (
            created)
    # Both outcomes of the race are possible; each round ended in one.
    assert seen["delete 204"] + seen["delete 409"] == ROUNDS
