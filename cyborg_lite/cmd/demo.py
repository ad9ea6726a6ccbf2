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


"""``cyborg-lite-demo``: a short walk through the real HTTP API.

With embedded defaults (a temporary sqlite database unless --state-dir, the
example inventory, no Nova, noauth) it starts cyborg_lite on a free local
port and plays Nova's part: create a device profile, create accelerator
requests, bind them, wait for them to be resolved, show the attach handle
Nova would give libvirt, and delete them by instance. Every request and
response is printed.
"""

import argparse
import json
import logging
import os
import shutil
import sys
import tempfile
import uuid
import warnings

import requests

from cyborg_lite.api import app as app_mod
from cyborg_lite.api import devserver
from cyborg_lite.db import api as db_api
from cyborg_lite import inventory_sync
from cyborg_lite import service

INVENTORY_NAME = os.path.join("etc", "cyborg_lite", "inventory.example.json")

#: Nova's identity when it calls Cyborg: the user's project and roles plus a
#: service token (X-Service-Roles), as keystonemiddleware would pass them.
NOVA_HEADERS = {"X-Project-Id": "demo-project", "X-User-Id": "demo-user",
                "X-Roles": "member,reader", "X-Service-Roles": "service"}
ADMIN_HEADERS = {"X-Project-Id": "admin-project", "X-User-Id": "admin",
                 "X-Roles": "admin"}


def find_example_inventory():
    """The example inventory: next to the source tree, or where pip put
    the data files (``<prefix>/etc/cyborg_lite``)."""
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [os.path.join(os.path.dirname(os.path.dirname(here)),
                               INVENTORY_NAME),
                  os.path.join(sys.prefix, INVENTORY_NAME),
                  os.path.join(os.getcwd(), INVENTORY_NAME)]
    for path in candidates:
        if os.path.isfile(path):
            return path
    raise SystemExit("cannot find the example inventory; looked in: "
                     + ", ".join(candidates) + " (use --inventory FILE)")


class Walk:
    """Sends requests and prints them for a person to read."""

    def __init__(self, base_url, out):
        self.base_url = base_url
        self.out = out
        self.step = 0

    def say(self, text=""):
        print(text, file=self.out)

    def title(self, text):
        self.step += 1
        self.say()
        self.say(f"== {self.step}. {text}")

    def call(self, method, path, headers, body=None, expect=None):
        """One request; prints both directions; returns the JSON or None."""
        who = ("Nova (user + service token)" if "X-Service-Roles" in headers
               else "admin" if headers else "anyone")
        self.say(f"--> {method} {path}    [as {who}]")
        if body is not None:
            self.say(_indent(json.dumps(body, indent=2)))
        response = requests.request(method, self.base_url + path,
                                    headers=headers, json=body, timeout=30)
        self.say(f"<-- {response.status_code} {response.reason}")
        data = None
        if response.content:
            data = response.json()
            self.say(_indent(json.dumps(_trim(data), indent=2)))
        if expect is not None and response.status_code != expect:
            raise SystemExit(f"demo failed: expected {expect}, got "
                             f"{response.status_code}")
        return data


def _indent(text):
    return "\n".join("      " + line for line in text.splitlines())


def _trim(data):
    """Drop the noisiest fields (links, timestamps) for reading."""
    if isinstance(data, list):
        return [_trim(item) for item in data]
    if isinstance(data, dict):
        return {k: _trim(v) for k, v in data.items()
                if k not in ("links", "created_at", "updated_at")}
    return data


def run_walk(walk, rp_uuid):
    """The scripted walk, against a server that has the example inventory.

    :returns: the attach handle info of the bound ARQ.
    """
    profile = f"demo-fpga-{uuid.uuid4().hex[:6]}"
    instance = str(uuid.uuid4())

    walk.title("Discover the API (what keystoneauth does first)")
    walk.call("GET", "/", {}, expect=200)

    walk.title("An operator creates a device profile: one FPGA region")
    walk.call("POST", "/v2/device_profiles", ADMIN_HEADERS,
              [{"name": profile, "description": "one FPGA region",
                "groups": [{"resources:FPGA": "1",
                            "trait:CUSTOM_FPGA_INTEL": "required"}]}],
              expect=201)

    walk.title("Nova's API reads the profile named in the flavor")
    walk.call("GET", f"/v2/device_profiles?name={profile}", NOVA_HEADERS,
              expect=200)

    walk.title("Nova's conductor creates the accelerator requests")
    arqs = walk.call("POST", "/v2/accelerator_requests", NOVA_HEADERS,
                     {"device_profile_name": profile}, expect=201)["arqs"]

    walk.title("Placement picked region 0 of fpga0; Nova binds the ARQs "
               "to it")
    walk.say(f"      (resource provider {rp_uuid}, instance {instance})")
    body = {arq["uuid"]: [
        {"op": "add", "path": "/hostname", "value": "compute-1.example.org"},
        {"op": "add", "path": "/device_rp_uuid", "value": rp_uuid},
        {"op": "add", "path": "/instance_uuid", "value": instance}]
        for arq in arqs}
    walk.call("PATCH", "/v2/accelerator_requests", NOVA_HEADERS, body,
              expect=202)

    walk.title("nova-compute waits until the ARQs are resolved")
    resolved = walk.call(
        "GET", f"/v2/accelerator_requests?instance={instance}"
        "&bind_state=resolved", NOVA_HEADERS, expect=200)["arqs"]

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
              NOVA_HEADERS, expect=204)
    walk.call("GET", f"/v2/accelerator_requests?instance={instance}",
              NOVA_HEADERS, expect=200)
    return resolved[0]["attach_handle_info"]


def main(argv=None):
    """Run the demo; exit code 0 when every step answered as expected."""
    parser = argparse.ArgumentParser(
        prog="cyborg-lite-demo", description=__doc__.splitlines()[0])
    parser.add_argument("--state-dir",
                        help="keep the sqlite database here (default: a "
                             "temporary directory, removed afterwards)")
    parser.add_argument("--inventory",
                        help="inventory document to import (default: the "
                             "example inventory)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    # NOTE(cyborg_lite): keep the output for the person reading it: no
    # library deprecation notices, no per-request access log.
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    logging.getLogger("werkzeug").setLevel(logging.WARNING)

    state_dir = args.state_dir or tempfile.mkdtemp(prefix="cyborg-lite-")
    inventory_path = args.inventory or find_example_inventory()
    try:
        return _run(state_dir, inventory_path)
    finally:
        if not args.state_dir:
            shutil.rmtree(state_dir, ignore_errors=True)


def _run(state_dir, inventory_path):
    conf = service.new_conf()
    service.prepare([], conf=conf, default_config_files=[],
                    setup_logging=False)
    conf.set_override("state_path", os.path.abspath(state_dir))
    db = db_api.Database.from_conf(conf)
    db.sync()
    with open(inventory_path, encoding="utf-8") as handle:
        document = json.load(handle)
    summary = inventory_sync.apply_document(db, document)
    out = sys.stdout
    print(f"cyborg_lite demo: database {conf.database.connection}", file=out)
    print(f"inventory {inventory_path}: host {summary['host']}, "
          f"{summary['devices']['created']} new device(s), "
          f"{summary['attach_handles']['created']} new attach handle(s)",
          file=out)
    region = next(r for d in document["devices"] for r in d["regions"]
                  if d["type"] == "FPGA")
    app = app_mod.create_app(conf, db=db)
    with devserver.serve_in_thread(app) as url:
        print(f"API served at {url} (noauth; Nova not configured, so no "
              "events are sent)", file=out)
        run_walk(Walk(url, out), region["rp_uuid"])
    print("\nDemo finished: every step answered as expected.", file=out)
    db.dispose()
    return 0
