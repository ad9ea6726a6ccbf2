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

"""A device disabled while one of its regions is programmed stays out of
the scheduler's reach when the programming ends (real Placement).

Disabling sets ``reserved = total`` on the device's providers; the run that
was programming the region restores ``reserved = 0`` only if the device is
still enabled when it ends.
"""

from tests.fixtures import polling
from tests.functional.cyborg_lite.programming import env

NLB0 = "CUSTOM_FPGA_FUNCTION_ID_INTEL_NLB0"


def _device_url(api):
    status, body = api.client.call("GET", "/v2/devices", env.ADMIN)
    assert status == 200, body
    (device,) = body["devices"]
    return f"/v2/devices/{device['uuid']}"


def _reserved(client, rp):
    return client.inventories(rp)[1]["FPGA"]["reserved"]


def test_device_disabled_during_programming_stays_reserved(reported):
    api, client = reported
    rp = api.rps[0]
    arqs = api.client.arqs(api.client.profile("nlb0"))
    assert api.bind(arqs)[0] == 202
    polling.wait_for(lambda: api.region().state == "programming",
                     what="the programming run to start")

    status, body = api.client.call("POST", _device_url(api) + "/disable",
                                   env.ADMIN)
    assert status == 200, body
    assert api.client.wait_resolved(arqs[0])["state"] == "Bound"

    # the run confirmed nlb0 and set its trait, but left reserved alone
    region = api.region()
    assert (region.state, region.function_id, region.last_error) == (
        "ready", "nlb0", None)
    assert NLB0 in client.traits(rp)[1]
    assert _reserved(client, rp) == 2
    assert _reserved(client, api.rps[1]) == 2

    status, body = api.client.call("POST", _device_url(api) + "/enable",
                                   env.ADMIN)
    assert status == 200, body
    assert _reserved(client, rp) == _reserved(client, api.rps[1]) == 0
