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

"""Drive a running real Cyborg 17 the way Nova does (see SOURCES.rst).

``python drive_real_cyborg.py API_URL`` creates two device profiles and
their ARQs, binds two instances on the fake driver's provider, leaves one
ARQ stuck in ``BindStarted`` (bound to an unknown provider) and one
``Initial``, and prints what it did as JSON.
"""

import json
import sys
import time
import uuid

import requests

PROJECT = "b0b3f7a2c1d84e2f9a6b5c4d3e2f1a0b"
ADMIN = {"X-Project-Id": PROJECT, "X-User-Id": "admin", "X-Roles": "admin"}
NOVA = {"X-Project-Id": PROJECT, "X-User-Id": "nova",
        "X-Roles": "member,reader", "X-Service-Roles": "service"}
HOST = "realcyborg-local"
FAKE_RP = "052d9e00-ae6b-3405-89f5-937c03c7f175"
GROUP = {"resources:FPGA": "1", "trait:CUSTOM_FAKE_DEVICE": "required"}


def drive(url, suffix=""):
    """Drive the real Cyborg at ``url``; profile names end in ``suffix``.

    :returns: ``{"instances": {instance: [arq]}, "stuck": ..., "initial":
        [arq], "arqs": {arq: [state, instance, handle]}}`` as real Cyborg
        answered.
    """
    url = url.rstrip("/") + "/v2"
    done = {"instances": {}}
    one, two = "import-one" + suffix, "import-two" + suffix
    for name, groups in ((one, [GROUP]),
                         (two, [dict(GROUP, **{
                             "resources:FPGA": "2"})])):
        resp = requests.post(f"{url}/device_profiles", headers=ADMIN,
                             json=[{"name": name, "groups": groups,
                                    "description": f"{name} for import"}])
        resp.raise_for_status()

    def create(profile):
        resp = requests.post(f"{url}/accelerator_requests", headers=NOVA,
                             json={"device_profile_name": profile})
        resp.raise_for_status()
        return [a["uuid"] for a in resp.json()["arqs"]]

    def bind(arqs, rp, instance):
        body = {a: [{"op": "add", "path": "/hostname", "value": HOST},
                    {"op": "add", "path": "/device_rp_uuid", "value": rp},
                    {"op": "add", "path": "/instance_uuid",
                     "value": instance}] for a in arqs}
        return requests.patch(f"{url}/accelerator_requests", headers=NOVA,
                              json=body)

    for profile in (one, two):
        instance = str(uuid.uuid4())
        arqs = create(profile)
        bind(arqs, FAKE_RP, instance).raise_for_status()
        done["instances"][instance] = arqs
    # An ARQ bound to a provider no deployable has: Cyborg moves it to
    # BindStarted and never rolls it back.
    stuck = create(one)
    resp = bind(stuck, str(uuid.uuid4()), str(uuid.uuid4()))
    done["stuck"] = {"arqs": stuck, "status": resp.status_code}
    done["initial"] = create(one)
    time.sleep(2)
    resp = requests.get(f"{url}/accelerator_requests", headers=NOVA)
    done["arqs"] = {a["uuid"]: [a["state"], a["instance_uuid"],
                                a.get("attach_handle_uuid")]
                    for a in resp.json()["arqs"]}
    return done


if __name__ == "__main__":
    json.dump(drive(sys.argv[1]), sys.stdout, indent=2)
    print()
