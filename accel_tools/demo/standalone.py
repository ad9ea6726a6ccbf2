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

"""The demo's standalone walk: cyborg_lite alone, on an inventory file.

No Ironic, Placement or Nova: cyborg_lite on sqlite imports the inventory
document, serves its API on a free local port, and the walk plays Nova
and an operator through a device profile, an accelerator request, its
binding and its deletion, printing every request and response.
"""

import json
import os
import sys
import uuid

from accel_tools import devserver
from accel_tools import standalone as standalone_settings
from accel_tools.demo import identities
from accel_tools.demo import output
from cyborg_lite import service
from cyborg_lite.api import app as app_mod
from cyborg_lite.db import engine as db_engine
from cyborg_lite.inventory import apply as inventory_apply


def run(state_dir, inventory_path):
    """Serve cyborg_lite on ``inventory_path`` and walk through its API.

    :returns: the exit code, 0.
    """
    conf = service.new_conf()
    service.prepare([], conf=conf, default_config_files=[],
                    setup_logging=False)
    standalone_settings.apply(conf)
    conf.set_override("state_path", os.path.abspath(state_dir))
    db = db_engine.Database.from_conf(conf)
    db.sync()
    with open(inventory_path, encoding="utf-8") as handle:
        document = json.load(handle)
    summary = inventory_apply.apply_document(db, document)
    out = sys.stdout
    print(f"cyborg_lite demo: database {conf.database.connection}", file=out)
    print(f"inventory {inventory_path}: host {summary['host']}, "
          f"{summary['devices']['created']} new device(s), "
          f"{summary['attach_handles']['created']} new attach handle(s)",
          file=out)
    region = next(r for d in document["devices"] for r in d["regions"]
                  if d["type"] == "FPGA")
    app = app_mod.create_app(conf, db=db)
    try:
        with devserver.serve_in_thread(app) as url:
            print(f"API served at {url} (noauth; Nova not configured, so no "
                  "events are sent)", file=out)
            walk_through_the_api(output.StandaloneWalk(url, out),
                                 region["rp_uuid"])
    finally:
        # NOTE(demo): the app's background threads (reconciler, embedded
        # agent) would otherwise outlive the state directory.
        app.extensions["cyborg_lite"].stop()
        db.dispose()
    print("\nDemo finished: every step answered as expected.", file=out)
    return 0


def walk_through_the_api(walk, rp_uuid):
    """The scripted walk, against a server that has the example inventory.

    :param walk: a :class:`~accel_tools.demo.output.StandaloneWalk`.
    :param rp_uuid: the resource provider Placement would have picked.
    :returns: the attach handle info of the bound ARQ.
    """
    nova, admin = identities.NOVA_HEADERS, identities.ADMIN_HEADERS
    profile = f"demo-fpga-{uuid.uuid4().hex[:6]}"
    instance = str(uuid.uuid4())

    walk.title("Discover the API (what keystoneauth does first)")
    walk.call("GET", "/", {}, expect=200)

    walk.title("An operator creates a device profile: one FPGA region")
    walk.call("POST", "/v2/device_profiles", admin,
              [{"name": profile, "description": "one FPGA region",
                "groups": [{"resources:FPGA": "1",
                            "trait:CUSTOM_FPGA_INTEL": "required"}]}],
              expect=201)

    walk.title("Nova's API reads the profile named in the flavor")
    walk.call("GET", f"/v2/device_profiles?name={profile}", nova,
              expect=200)

    walk.title("Nova's conductor creates the accelerator requests")
    arqs = walk.call("POST", "/v2/accelerator_requests", nova,
                     {"device_profile_name": profile}, expect=201)["arqs"]

    walk.title("Placement picked region 0 of fpga0; Nova binds the ARQs "
               "to it")
    walk.say(f"      (resource provider {rp_uuid}, instance {instance})")
    body = {arq["uuid"]: [
        {"op": "add", "path": "/hostname", "value": "compute-1.example.org"},
        {"op": "add", "path": "/device_rp_uuid", "value": rp_uuid},
        {"op": "add", "path": "/instance_uuid", "value": instance}]
        for arq in arqs}
    walk.call("PATCH", "/v2/accelerator_requests", nova, body,
              expect=202)

    walk.title("nova-compute waits until the ARQs are resolved")
    resolved = walk.call(
        "GET", f"/v2/accelerator_requests?instance={instance}"
        "&bind_state=resolved", nova, expect=200)["arqs"]

    walk.title("What libvirt gets: the attach handle of each ARQ")
    for arq in resolved:
        info = arq["attach_handle_info"]
        walk.say(f"      ARQ {arq['uuid']}: {arq['state']}, "
                 f"{arq['attach_handle_type']} device "
                 f"{info['domain']}:{info['bus']}:{info['device']}."
                 f"{info['function']} -> <hostdev mode='subsystem' "
                 f"type='pci' managed='yes'>")

    walk.title("The instance is deleted: Nova deletes its ARQs")
    walk.call("DELETE", f"/v2/accelerator_requests?instance={instance}",
              nova, expect=204)
    walk.call("GET", f"/v2/accelerator_requests?instance={instance}",
              nova, expect=200)
    return resolved[0]["attach_handle_info"]
