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

"""``cyborg-lite-demo``: the whole product's story, end to end, on one host.

It starts the real components the tests use, all on free local ports under
one state directory: the project's Redfish BMC emulator, a real Placement
(sqlite, noauth2), a real Ironic all-in-one with the accel-redfish plugin
(reporting to that Placement) and cyborg_lite (sqlite, its agent embedded
with the sim driver on the in-process transport). Then it plays every
part: nova-compute registering the host, an operator enrolling and
managing the server and updating its FPGA firmware through a manual
clean, cyborg_lite reading the devices from Ironic and Placement, and
Nova scheduling, binding and deleting accelerator requests. Each step is
printed with its timing; a failing step stops the walk with the tail of
the failing component's log and exit code 1.

``--standalone`` runs the short walk of standalone mode instead: no
Ironic, Placement or Nova, cyborg_lite on an inventory file.
"""

import argparse
import contextlib
import hashlib
import json
import logging
import os
import shutil
import sys
import tempfile
import time
import uuid
import warnings

import requests

from cyborg_lite.api import app as app_mod
from accel_tools import devserver
from cyborg_lite.db import api as db_api
from cyborg_lite.inventory import apply as inventory_apply
from cyborg_lite import service

INVENTORY_NAME = os.path.join("etc", "cyborg_lite", "inventory.example.json")

#: Nova's identity when it calls Cyborg: the user's project and roles plus a
#: service token (X-Service-Roles), as keystonemiddleware would pass them.
NOVA_HEADERS = {"X-Project-Id": "demo-project", "X-User-Id": "demo-user",
                "X-Roles": "member,reader", "X-Service-Roles": "service"}
ADMIN_HEADERS = {"X-Project-Id": "admin-project", "X-User-Id": "admin",
                 "X-Roles": "admin"}

#: The host the server becomes: Ironic node name = hypervisor host name =
#: compute-node resource provider name = the agent's [agent] host.
HOST = "compute-1.example.org"
#: The FPGA firmware the manual clean installs.
FIRMWARE_VERSION = "2.1.0"
#: The function the second device profile asks for (bind-time programming).
FUNCTION_ID = "nlb0"
#: Placement microversion of the demo's own calls (Nova's query syntax).
PLACEMENT_MV = "1.39"


class DemoFailed(Exception):
    """A step did not end as expected; the message says what happened."""


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


# -- printing ----------------------------------------------------------------

class Walk:
    """Numbered steps with timings, printed for a person to read.

    :param out: where to print.
    :param logs: ``{component: callable returning its log tail}``, printed
        when a step involving that component fails.
    """

    def __init__(self, out, logs=None):
        self.out = out
        self.logs = logs if logs is not None else {}
        self.step_no = 0
        self.timings = []
        self.began = time.monotonic()

    def say(self, text=""):
        """Print one line (or several)."""
        print(text, file=self.out, flush=True)

    def detail(self, text):
        """Print an indented line under the current step."""
        for line in str(text).splitlines() or [""]:
            self.say("      " + line)

    @contextlib.contextmanager
    def step(self, title, components=()):
        """One numbered step; on failure prints the components' logs and
        raises :class:`DemoFailed`."""
        self.step_no += 1
        number = self.step_no
        self.say()
        self.say(f"== {number}. {title}")
        began = time.monotonic()
        try:
            yield
        except Exception as exc:
            seconds = time.monotonic() - began
            self.timings.append((number, title, seconds, False))
            message = _shorten(str(exc) or type(exc).__name__)
            self.say(f"   !! step {number} failed after {seconds:.1f} s: "
                     f"{message}")
            for name in components:
                tail = self._log_tail(name)
                if tail:
                    self.say(f"   ---- last lines of the {name} log ----")
                    self.detail(tail.rstrip())
            raise DemoFailed(f"step {number} ({title}) failed: "
                             f"{message}") from exc
        seconds = time.monotonic() - began
        self.timings.append((number, title, seconds, True))
        self.say(f"   ({seconds:.1f} s)")

    def _log_tail(self, name):
        try:
            lines = self.logs[name]().splitlines()[-15:]
            return "\n".join(_shorten(line, 240) for line in lines)
        except Exception:
            return ""

    def summary(self, facts):
        """The closing table of steps and timings, then ``facts``."""
        self.say()
        self.say("== Summary")
        for number, title, seconds, ok in self.timings:
            mark = "ok  " if ok else "FAIL"
            self.say(f"   {mark} {number:>2}. {title:<66.66} "
                     f"{seconds:6.1f} s")
        total = time.monotonic() - self.began
        self.say(f"   total {total:.1f} s")
        for fact in facts:
            self.say(f"   - {fact}")


class Api:
    """HTTP calls to cyborg_lite, one line per request and response."""

    def __init__(self, base_url, walk, verbose=False):
        self.base_url = base_url
        self.walk = walk
        self.verbose = verbose

    def call(self, method, path, headers, body=None, expect=None,
             show=False):
        """One request; returns ``(status, JSON or None)``.

        :param expect: the status wanted; another one fails the step.
        :param show: print the (trimmed) response body.
        """
        who = ("Nova, user + service token" if "X-Service-Roles" in headers
               else "admin" if headers else "anyone")
        response = requests.request(method, self.base_url + path,
                                    headers=headers, json=body, timeout=60)
        self.walk.detail(f"--> {method} {path}  [{who}]  <-- "
                         f"{response.status_code} {response.reason}")
        data = None
        if response.content:
            try:
                data = response.json()
            except ValueError:
                data = response.text
        if (show or self.verbose) and data:
            self.walk.detail(_indent(json.dumps(_trim(data), indent=2)))
        if expect is not None and response.status_code != expect:
            raise DemoFailed(f"{method} {path}: expected {expect}, got "
                             f"{response.status_code}: {data}")
        return response.status_code, data


def _shorten(text, limit=400):
    """``text`` on one line, cut to ``limit`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _indent(text):
    return "\n".join("    " + line for line in text.splitlines())


def _trim(data):
    """Drop the noisiest fields (links, timestamps) for reading."""
    if isinstance(data, list):
        return [_trim(item) for item in data]
    if isinstance(data, dict):
        return {k: _trim(v) for k, v in data.items()
                if k not in ("links", "created_at", "updated_at")}
    return data


def _bdf(info):
    return "{}:{}:{}.{}".format(info["domain"], info["bus"], info["device"],
                                info["function"])


# -- the whole story -----------------------------------------------------------

class Story:
    """The end-to-end walk on embedded defaults (see the module doc)."""

    def __init__(self, state_dir, walk, verbose=False):
        self.state_dir = state_dir
        self.walk = walk
        self.verbose = verbose
        self.stack = None
        self.cyborg = None
        self.facts = []
        self.instances = []
        self.log_file = os.path.join(state_dir, "cyborg_lite",
                                     "cyborg_lite.log")
        walk.logs.update({
            "bmc": lambda: self.stack.log_tail("bmc"),
            "placement": lambda: self.stack.log_tail("placement"),
            "ironic": lambda: self.stack.log_tail("ironic"),
            "cyborg_lite": self._cyborg_log_tail,
        })

    def _cyborg_log_tail(self):
        from accel_tools.embedded import common
        return common.log_tail(self.log_file, lines=30)

    def run(self):
        """All steps; raises :class:`DemoFailed` at the first failure."""
        try:
            self.start_services()
            self.register_compute_host()
            self.enroll_and_manage()
            self.update_firmware()
            self.show_placement_tree()
            self.sync_cyborg()
            profile = self.first_profile()
            rp_uuid, instance = self.schedule(profile)
            self.bind(profile, rp_uuid, instance)
            if self.programming_available():
                self.bind_with_programming()
            else:
                self.walk.say()
                self.walk.say("   (bind-time programming is not part of "
                              "this build: the accel:function_id walk is "
                              "skipped)")
            self.delete_instances()
        finally:
            self.stop()
        self.walk.summary(self.facts)

    # -- 1. services -----------------------------------------------------------

    def start_services(self):
        from accel_tools.embedded import stack as stack_mod

        with self.walk.step("Start the services (free ports, state under "
                            f"{self.state_dir})",
                            ("bmc", "placement", "ironic", "cyborg_lite")):
            self.stack = stack_mod.IronicStack(self.state_dir)
            self.stack.start()
            stack = self.stack
            self.walk.detail(f"BMC emulator (Redfish)     {stack.bmc.url}"
                             "/redfish/v1  (CPU, FPGA with 2 slots, GPU)")
            self.walk.detail(f"Placement (sqlite, noauth2) {stack.placement.url}")
            self.walk.detail(f"Ironic all-in-one           {stack.ironic.url}"
                             "  (accel-redfish, [placement] set; started in "
                             f"{stack.ironic.start_seconds:.1f} s)")
            self.walk.detail(f"firmware images over HTTP   {stack.images.url}")
            self._start_cyborg()
            self.walk.detail(f"cyborg_lite API             {self.cyborg.url}"
                             "  (sqlite, noauth, agent embedded: sim driver, "
                             "in-process messaging)")
            self.placement = stack.placement.connection()
            self.baremetal = stack.ironic.connection().baremetal

    def _start_cyborg(self):
        from accel_tools.embedded import placement as placement_launcher

        directory = os.path.join(self.state_dir, "cyborg_lite")
        os.makedirs(directory, exist_ok=True)
        _log_to_file(self.log_file)
        conf = service.new_conf()
        service.prepare([], conf=conf, default_config_files=[],
                        setup_logging=False)
        sets = {
            ("DEFAULT", "state_path"): directory,
            ("database", "connection"):
                f"sqlite:///{directory}/cyborg_lite.sqlite",
            ("agent", "host"): HOST,
            ("agent", "sim_state_dir"): os.path.join(directory, "sim"),
            ("agent", "sim_inventory_file"): self._sim_inventory(directory),
            ("agent", "image_catalog_dir"): self._image_catalog(directory),
            ("agent", "sim_program_seconds"): 1.0,
        }
        for (group, name), value in sets.items():
            conf.set_override(name, value,
                              group=None if group == "DEFAULT" else group)
        placement_launcher.apply_client_conf(
            conf, "placement", self.stack.placement.url)
        _apply_noauth_endpoint(conf, "ironic", self.stack.ironic.url)
        db = db_api.Database.from_conf(conf)
        db.sync()
        app = app_mod.create_app(conf, db=db)
        server = devserver.serve_in_thread(app)
        url = server.__enter__()
        self.cyborg = _Cyborg(conf, db, app, server, url)
        self.api = Api(url, self.walk, verbose=self.verbose)

    def _sim_inventory(self, directory):
        """The host's in-band view for the sim driver: the example
        inventory, whose PCI addresses are the emulator's devices."""
        with open(find_example_inventory(), encoding="utf-8") as handle:
            document = json.load(handle)
        document["host"] = HOST
        path = os.path.join(directory, "host-devices.json")
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(document, handle, indent=2)
        return path

    def _image_catalog(self, directory):
        """The standalone image catalog with one function image."""
        catalog = os.path.join(directory, "images")
        os.makedirs(catalog, exist_ok=True)
        content = f"demo bitstream for {FUNCTION_ID}\n".encode()
        with open(os.path.join(catalog, f"{FUNCTION_ID}.gbs"), "wb") as f:
            f.write(content)
        index = {"images": [{"id": f"img-{FUNCTION_ID}",
                             "function_id": FUNCTION_ID,
                             "file": f"{FUNCTION_ID}.gbs",
                             "sha256": hashlib.sha256(content).hexdigest()}]}
        with open(os.path.join(catalog, "index.json"), "w") as f:
            json.dump(index, f)
        return catalog

    def stop(self):
        """Stop cyborg_lite and the stack (best effort)."""
        if self.cyborg is not None:
            self.cyborg.close()
            self.cyborg = None
        if self.stack is not None:
            self.stack.stop()

    # -- 2-4. Ironic -------------------------------------------------------------

    def register_compute_host(self):
        from accel_tools.embedded import placement as placement_launcher

        with self.walk.step("nova-compute registers the host in Placement",
                            ("placement",)):
            self.root_uuid, _ = placement_launcher.create_compute_node(
                self.placement, name=HOST, traits=["COMPUTE_ACCELERATORS"])
            self.walk.detail(f"compute node {HOST}  {self.root_uuid}  "
                             "traits: COMPUTE_ACCELERATORS")

    def enroll_and_manage(self):
        from accel_tools.embedded import ironic as ironic_launcher

        with self.walk.step("An operator enrolls the server in Ironic and "
                            "manages it (verify reads the BMC)",
                            ("ironic", "bmc")):
            node = ironic_launcher.enroll(self.baremetal, self.stack.bmc,
                                          name=HOST)
            self.walk.detail(f"node {node.id}  driver accel-redfish  -> "
                             "manage")
            node = ironic_launcher.manage(self.baremetal, node, timeout=90)
            if node.provision_state != "manageable":
                raise DemoFailed(f"node is {node.provision_state}: "
                                 f"{node.last_error}")
            self.node = node
            document = node.extra.get("accelerators")
            if not document:
                raise DemoFailed("no inventory document on the node")
            self.document = document
            self.walk.detail(f"manageable; inventory document "
                             f"node.extra['accelerators'] (host "
                             f"{document['host']}):")
            for device in document["devices"]:
                regions = ", ".join(r["id"] for r in device["regions"])
                self.walk.detail(
                    f"  {device['id']:<6} {device['type']:<5} "
                    f"{device['vendor']} {device['model']:<12} "
                    f"{device['pci_address']}  firmware "
                    f"{device['firmware_version']:<15} "
                    f"{device['program_mode']}, region(s) {regions}")
            self.walk.detail("node traits: " + ", ".join(sorted(node.traits)))
            self._print_firmware("firmware components")

    def _print_firmware(self, label):
        components = self.baremetal.list_node_firmware(self.node)
        self.walk.detail(label + ": " + ", ".join(
            f"{c['component']} {c['current_version']}"
            for c in components.get("firmware", [])))
        return {c["component"]: c["current_version"]
                for c in components.get("firmware", [])}

    def update_firmware(self):
        from accel_tools.embedded import images
        from accel_tools.embedded import ironic as ironic_launcher

        fpga = self._fpga()
        with self.walk.step(
                f"Manual clean: update_accelerator_firmware "
                f"({fpga['id']} {fpga['firmware_version']} -> "
                f"{FIRMWARE_VERSION})", ("ironic", "bmc")):
            path, checksum = images.make_firmware_image(
                self.stack.images.root, FIRMWARE_VERSION)
            url = self.stack.images.url_for(path)
            step = {"interface": "firmware",
                    "step": "update_accelerator_firmware",
                    "args": {"settings": [{"accelerator": fpga["id"],
                                           "url": url, "checksum": checksum,
                                           "version": FIRMWARE_VERSION}]}}
            self.walk.detail(f"image {url}")
            self.walk.detail(f"checksum {checksum[:23]}...  (checked by the "
                             "conductor before the BMC sees the URL)")
            node = ironic_launcher.clean(self.baremetal, self.node, [step],
                                         timeout=120)
            if node.provision_state != "manageable":
                raise DemoFailed(f"clean ended in {node.provision_state}: "
                                 f"{node.last_error}")
            self.node = node
            self.document = node.extra["accelerators"]
            confirmed = self._bmc_version(fpga["redfish_uri"])
            self.walk.detail(f"clean done; the BMC's FirmwareInventory "
                             f"reports {fpga['id']} at {confirmed}")
            if confirmed != FIRMWARE_VERSION:
                raise DemoFailed(f"the BMC reports {confirmed}, not "
                                 f"{FIRMWARE_VERSION}")
            versions = self._print_firmware("firmware components now")
            if versions.get(f"accel:{fpga['id']}") != FIRMWARE_VERSION:
                raise DemoFailed("Ironic's firmware components do not show "
                                 "the new version")
            self.facts.append(f"{fpga['id']} firmware "
                              f"{fpga['firmware_version']} -> {confirmed} "
                              "(manual clean, confirmed by the BMC)")

    def _fpga(self):
        return next(d for d in self.document["devices"]
                    if d["type"] == "FPGA")

    def _bmc_version(self, redfish_uri):
        """What the BMC's FirmwareInventory says for the device."""
        root = self.stack.bmc.sushy()
        inventory = root.get_update_service().firmware_inventory
        device = redfish_uri.rstrip("/").rsplit("/", 1)[-1]
        for member in inventory.get_members():
            if member.identity.endswith("-" + device):
                return member.version
        raise DemoFailed(f"the BMC lists no firmware for {redfish_uri}")

    # -- 5. Placement ------------------------------------------------------------

    def show_placement_tree(self):
        with self.walk.step("Placement: the conductor reported nested "
                            "providers under the compute node",
                            ("placement", "ironic")):
            providers = self._get(f"/resource_providers?in_tree="
                                  f"{self.root_uuid}")["resource_providers"]
            wanted = {r["rp_uuid"] for d in self.document["devices"]
                      for r in d["regions"]}
            missing = wanted - {p["uuid"] for p in providers}
            if missing:
                raise DemoFailed(f"providers not in Placement: "
                                 f"{sorted(missing)}")
            for rp in sorted(providers,
                             key=lambda p: (p["parent_provider_uuid"]
                                            is not None, p["name"])):
                self.walk.detail(self._describe_rp(rp))
            self.facts.append(f"{len(wanted)} nested resource providers "
                              f"reported by the Ironic conductor under {HOST}")

    def _get(self, path):
        resp = self.placement.placement.get(path, microversion=PLACEMENT_MV)
        if resp.status_code != 200:
            raise DemoFailed(f"Placement GET {path}: {resp.status_code} "
                             f"{resp.text}")
        return resp.json()

    def _traits(self, rp_uuid):
        return sorted(self._get(f"/resource_providers/{rp_uuid}/traits")
                      ["traits"])

    def _describe_rp(self, rp):
        inventories = self._get(f"/resource_providers/{rp['uuid']}/"
                                "inventories")["inventories"]
        inv = ", ".join(f"{rc} total {i['total']} reserved {i['reserved']}"
                        for rc, i in sorted(inventories.items())) or "-"
        prefix = "  └─ " if rp["parent_provider_uuid"] else ""
        return (f"{prefix}{rp['name']}  [{inv}]\n"
                f"{'     ' if prefix else '  '}traits: "
                + ", ".join(self._traits(rp["uuid"])))

    # -- 6. cyborg_lite reads the devices ---------------------------------------

    def sync_cyborg(self):
        from cyborg_lite.inventory import ironic as ironic_inventory
        from accel_common import clients
        from accel_common.placement import client as placement_client

        with self.walk.step("cyborg_lite reads the devices from Ironic and "
                            "Placement; its agent adds the attach handles",
                            ("cyborg_lite", "ironic", "placement")):
            conf = self.cyborg.conf
            summary = ironic_inventory.sync(
                self.cyborg.db, clients.connection(conf, "ironic"),
                host=HOST, placement=placement_client.Client(
                    clients.connection(conf, "placement")),
                agent_api=self.cyborg.agent_api())
            report = summary["handles"].get(HOST)
            if report is None or report["error"]:
                raise DemoFailed(f"inventory sync: {summary}")
            self.walk.detail(
                f"attach handles of {HOST}: " + {
                    "document": "from the Ironic document",
                    "agent": "from the agent's in-band discovery for "
                             "region(s) " + ", ".join(report["filled"]),
                    "kept": "none discovered, known ones kept",
                }[report["source"]])
            if report["unmatched"]:
                self.walk.detail("devices the agent found but Ironic does "
                                 "not list: " + ", ".join(report["unmatched"]))
            if summary["skipped"] or summary["not_in_placement"] or \
                    len(summary["applied"]) != 1:
                raise DemoFailed(f"inventory sync: {summary}")
            applied = summary["applied"][0]
            self.walk.detail(
                "sync from Ironic (as 'cyborg-lite-manage inventory "
                "sync'): " + ", ".join(
                    f"{kind.replace('_', ' ')} " + " ".join(
                        f"{n} {what}" for what, n in counts.items() if n)
                    for kind, counts in applied.items()
                    if isinstance(counts, dict)))
            _, body = self.api.call("GET", "/v2/deployables", ADMIN_HEADERS,
                                    expect=200)
            for dep in body["deployables"]:
                self.walk.detail(f"  deployable {dep['name']}  rp "
                                 f"{dep['rp_uuid']}  handles "
                                 f"{dep.get('num_accelerators')}")

    # -- 7-8. Nova: schedule, create, bind ---------------------------------------

    def first_profile(self):
        name = f"demo-fpga-{uuid.uuid4().hex[:6]}"
        groups = [{"resources:FPGA": "1",
                   "trait:CUSTOM_FPGA_INTEL_PAC_ARRIA10": "required"}]
        with self.walk.step("An operator creates a device profile: one "
                            "Arria10 FPGA region", ("cyborg_lite",)):
            self.api.call("POST", "/v2/device_profiles", ADMIN_HEADERS,
                          [{"name": name, "description": "one FPGA region",
                            "groups": groups}], expect=201)
            self.walk.detail(f"{name}: {json.dumps(groups)}")
        return name

    def schedule(self, profile, title=None):
        """Nova's scheduler: the profile's request groups, the allocation
        candidates, the claim. Returns ``(rp uuid, instance uuid)``."""
        from accel_tools import request_groups

        instance = str(uuid.uuid4())
        with self.walk.step(title or "Nova schedules a server whose flavor "
                            "names the profile", ("cyborg_lite", "placement")):
            _, body = self.api.call(
                "GET", f"/v2/device_profiles?name={profile}", NOVA_HEADERS,
                expect=200)
            (dp,) = body["device_profiles"]
            query = request_groups.querystring(
                dp["groups"], root_required=["COMPUTE_ACCELERATORS"])
            path = f"/allocation_candidates?{query}"
            self.walk.detail(f"--> Placement GET {path}")
            candidates = self._get(path)
            names = self._names()
            # NOTE(demo): Nova's weighers pick among the candidates; the
            # demo takes them in provider-name order, so its walk is the
            # same on every run.
            requests_ = sorted(
                candidates["allocation_requests"],
                key=lambda c: names.get(c["mappings"]["device_profile_0"][0],
                                        ""))
            self.walk.detail(f"<-- {len(requests_)} candidate(s): " + "; ".join(
                names.get(c["mappings"]["device_profile_0"][0], "?")
                for c in requests_))
            if not requests_:
                raise DemoFailed("no allocation candidates")
            chosen = requests_[0]
            rp_uuid = chosen["mappings"]["device_profile_0"][0]
            resp = self.placement.placement.put(
                f"/allocations/{instance}", microversion=PLACEMENT_MV,
                json={"allocations": chosen["allocations"],
                      "mappings": chosen["mappings"],
                      "project_id": NOVA_HEADERS["X-Project-Id"],
                      "user_id": NOVA_HEADERS["X-User-Id"],
                      "consumer_generation": None,
                      "consumer_type": "INSTANCE"})
            if resp.status_code != 204:
                raise DemoFailed(f"claiming the allocation: "
                                 f"{resp.status_code} {resp.text}")
            self.instances.append(instance)
            self.walk.detail(f"claimed for instance {instance}: "
                             f"{names.get(rp_uuid)}")
        return rp_uuid, instance

    def _names(self):
        providers = self._get(f"/resource_providers?in_tree="
                              f"{self.root_uuid}")["resource_providers"]
        return {p["uuid"]: p["name"] for p in providers}

    def bind(self, profile, rp_uuid, instance):
        with self.walk.step("Nova creates the accelerator request, binds it "
                            "to the provider Placement picked; nova-compute "
                            "reads the attach handle", ("cyborg_lite",)):
            arq = self._create_and_bind(profile, rp_uuid, instance)
            info = arq["attach_handle_info"]
            self.walk.detail(
                f"ARQ {arq['uuid']}: {arq['state']}, "
                f"{arq['attach_handle_type']} device {_bdf(info)} -> "
                "<hostdev mode='subsystem' type='pci' managed='yes'>")
            self.facts.append(f"ARQ bound to {self._names().get(rp_uuid)}: "
                              f"PCI device {_bdf(info)}")

    def _create_and_bind(self, profile, rp_uuid, instance, show=True):
        _, body = self.api.call("POST", "/v2/accelerator_requests",
                                NOVA_HEADERS,
                                {"device_profile_name": profile}, expect=201)
        (arq,) = body["arqs"]
        patch = {arq["uuid"]: [
            {"op": "add", "path": "/hostname", "value": HOST},
            {"op": "add", "path": "/device_rp_uuid", "value": rp_uuid},
            {"op": "add", "path": "/instance_uuid", "value": instance}]}
        self.api.call("PATCH", "/v2/accelerator_requests", NOVA_HEADERS,
                      patch, expect=202)
        path = (f"/v2/accelerator_requests?instance={instance}"
                "&bind_state=resolved")
        began = time.monotonic()
        locked = 0
        while True:
            status, body = self._quiet_get(path)
            if status != 423:
                break
            locked += 1
            if time.monotonic() - began > 60:
                raise DemoFailed("the ARQ was not resolved within 60 s")
            time.sleep(0.2)
        if locked:
            self.walk.detail(f"(nova-compute polled {locked} time(s): 423 "
                             f"Locked while the region was programmed, "
                             f"{time.monotonic() - began:.1f} s)")
        status, body = self.api.call("GET", path, NOVA_HEADERS, expect=200,
                                     show=show)
        (arq,) = body["arqs"]
        if arq["state"] != "Bound":
            raise DemoFailed(f"ARQ {arq['uuid']} is {arq['state']}")
        return arq

    def _quiet_get(self, path):
        response = requests.get(self.cyborg.url + path, headers=NOVA_HEADERS,
                                timeout=60)
        return response.status_code, None

    # -- 9. bind-time programming -------------------------------------------------

    def programming_available(self):
        """True when this build programs regions at bind time."""
        services = self.cyborg.app.extensions["cyborg_lite"]
        return getattr(services, "programmer", None) is not None

    def bind_with_programming(self):
        name = f"demo-nlb-{uuid.uuid4().hex[:6]}"
        groups = [{"resources:FPGA": "1",
                   "trait:CUSTOM_FPGA_INTEL_PAC_ARRIA10": "required",
                   "accel:function_id": FUNCTION_ID}]
        with self.walk.step(f"A second profile asks for accel:function_id "
                            f"{FUNCTION_ID}", ("cyborg_lite",)):
            self.api.call("POST", "/v2/device_profiles", ADMIN_HEADERS,
                          [{"name": name, "groups": groups}], expect=201)
            self.walk.detail(f"{name}: {json.dumps(groups)}")
        rp_uuid, instance = self.schedule(
            name, title="Nova schedules a second server with it")
        with self.walk.step("Bind: cyborg_lite programs the region through "
                            "the embedded agent, then moves the function "
                            "trait in Placement", ("cyborg_lite",
                                                   "placement")):
            before = [t for t in self._traits(rp_uuid)
                      if t.startswith("CUSTOM_FPGA_FUNCTION_ID")]
            self.walk.detail(f"{self._names()[rp_uuid]} function traits "
                             f"before: {before or 'none'}")
            arq = self._create_and_bind(name, rp_uuid, instance, show=False)
            after = [t for t in self._traits(rp_uuid)
                     if t.startswith("CUSTOM_FPGA_FUNCTION_ID")]
            self.walk.detail(f"function traits after: {after or 'none'}")
            if not any(t.endswith(FUNCTION_ID.upper()) for t in after):
                raise DemoFailed(f"no function trait for {FUNCTION_ID} on "
                                 f"{rp_uuid}: {after}")
            self.walk.detail(f"ARQ {arq['uuid']}: {arq['state']}, PCI "
                             f"device {_bdf(arq['attach_handle_info'])}")
            self.facts.append(f"region programmed with {FUNCTION_ID} at "
                              f"bind time; Placement trait {after[0]}")

    # -- 10. delete ----------------------------------------------------------------

    def delete_instances(self):
        with self.walk.step("The servers are deleted: Nova deletes their "
                            "ARQs and allocations", ("cyborg_lite",
                                                     "placement")):
            for instance in self.instances:
                self.api.call("DELETE", f"/v2/accelerator_requests?"
                              f"instance={instance}", NOVA_HEADERS,
                              expect=204)
                resp = self.placement.placement.delete(
                    f"/allocations/{instance}", microversion=PLACEMENT_MV)
                if resp.status_code != 204:
                    raise DemoFailed(f"deleting allocations of {instance}: "
                                     f"{resp.status_code} {resp.text}")
                _, body = self.api.call(
                    "GET", f"/v2/accelerator_requests?instance={instance}",
                    NOVA_HEADERS, expect=200)
                if body["arqs"]:
                    raise DemoFailed(f"ARQs left for {instance}")
            self.walk.detail(f"{len(self.instances)} instance(s): no ARQs "
                             "left, allocations removed, handles free again")


class _Cyborg:
    """The in-process cyborg_lite: configuration, database, app, server."""

    def __init__(self, conf, db, app, server, url):
        self.conf, self.db, self.app = conf, db, app
        self.server, self.url = server, url
        self._agent = None
        self._agent_api = None

    def agent_api(self):
        """The RPC client of the agents, starting the embedded agent once
        (through the programmer when this build has one)."""
        if self._agent_api is None:
            from cyborg_lite.agent import rpcapi
            from cyborg_lite.agent import service as agent_service

            programmer = getattr(self.app.extensions["cyborg_lite"],
                                 "programmer", None)
            if programmer is not None and getattr(programmer, "embedded",
                                                  False):
                self._agent_api = programmer.agent_api()
            else:
                self._agent = agent_service.start_embedded(self.conf)
                self._agent_api = rpcapi.AgentAPI(self.conf)
        return self._agent_api

    def close(self):
        """Stop serving, the programmer, the notifier and the agent."""
        services = self.app.extensions["cyborg_lite"]
        with contextlib.suppress(Exception):
            self.server.__exit__(None, None, None)
        with contextlib.suppress(Exception):
            services.stop()
        with contextlib.suppress(Exception):
            services.notifier.shutdown()
        if self._agent is not None:
            with contextlib.suppress(Exception):
                self._agent.stop()
        self.db.dispose()


def _apply_noauth_endpoint(conf, group, url):
    """Point keystoneauth group ``group`` at ``url`` without auth (Ironic
    with ``auth_strategy = noauth``)."""
    from keystoneauth1 import loading as ks_loading

    ks_loading.register_auth_conf_options(conf, group)
    conf.set_override("auth_type", "none", group)
    conf.set_override("endpoint_override", url, group)


def _log_to_file(path):
    """Send this process's logging to ``path`` (the walk owns stdout)."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter(
        "%(asctime)s %(levelname)s %(name)s %(message)s"))
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    logging.getLogger("werkzeug").setLevel(logging.WARNING)


# -- standalone mode -------------------------------------------------------------

def _indent6(text):
    return "\n".join("      " + line for line in text.splitlines())


class StandaloneWalk:
    """Standalone mode: sends requests and prints both directions."""

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
            self.say(_indent6(json.dumps(body, indent=2)))
        response = requests.request(method, self.base_url + path,
                                    headers=headers, json=body, timeout=30)
        self.say(f"<-- {response.status_code} {response.reason}")
        data = None
        if response.content:
            data = response.json()
            self.say(_indent6(json.dumps(_trim(data), indent=2)))
        if expect is not None and response.status_code != expect:
            raise SystemExit(f"demo failed: expected {expect}, got "
                             f"{response.status_code}")
        return data


def run_standalone_walk(walk, rp_uuid):
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



def _run_story(state_dir, verbose=False):
    out = sys.stdout
    walk = Walk(out)
    walk.say("ironic-accel demo: the device life cycle in Ironic, the "
             "application life cycle in cyborg_lite, Nova's part played "
             "by this script.")
    walk.say(f"State directory: {state_dir}")
    story = Story(state_dir, walk, verbose=verbose)
    try:
        story.run()
    except DemoFailed as exc:
        walk.summary(story.facts)
        walk.say()
        walk.say(f"Demo FAILED: {exc}")
        walk.say(f"(every component's log is under {state_dir}; "
                 "--keep keeps them)")
        return 1
    walk.say()
    walk.say("Demo finished: every step answered as expected.")
    return 0


def main(argv=None):
    """Run the demo; exit code 0 when every step answered as expected."""
    parser = argparse.ArgumentParser(
        prog="cyborg-lite-demo", description=__doc__.splitlines()[0])
    parser.add_argument("--state-dir",
                        help="put every component's files (databases, "
                             "configuration, logs) here; it must be empty "
                             "or absent (default: a temporary directory)")
    parser.add_argument("--keep", action="store_true",
                        help="keep the state directory at the end")
    parser.add_argument("--verbose", action="store_true",
                        help="print every cyborg_lite response body")
    parser.add_argument("--standalone", action="store_true",
                        help="only the standalone walk: cyborg_lite on an "
                             "inventory file, no Ironic, Placement or Nova")
    parser.add_argument("--inventory",
                        help="with --standalone: the inventory document "
                             "to import (default: the example inventory)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    # NOTE(cyborg_lite): keep the output for the person reading it: no
    # library deprecation notices, no per-request access log.
    warnings.simplefilter("ignore")
    logging.getLogger("werkzeug").setLevel(logging.WARNING)

    if args.state_dir:
        state_dir = os.path.abspath(args.state_dir)
        if os.path.isdir(state_dir) and os.listdir(state_dir):
            parser.error(f"--state-dir {state_dir} is not empty: the demo "
                         "starts from fresh databases")
        os.makedirs(state_dir, exist_ok=True)
    else:
        state_dir = tempfile.mkdtemp(prefix="ironic-accel-demo-")
    try:
        if args.standalone:
            return _run_standalone(
                state_dir, args.inventory or find_example_inventory())
        return _run_story(state_dir, verbose=args.verbose)
    finally:
        if args.keep:
            print(f"State kept in {state_dir}")
        else:
            shutil.rmtree(state_dir, ignore_errors=True)


def _run_standalone(state_dir, inventory_path):
    conf = service.new_conf()
    service.prepare([], conf=conf, default_config_files=[],
                    setup_logging=False)
    conf.set_override("state_path", os.path.abspath(state_dir))
    db = db_api.Database.from_conf(conf)
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
            run_standalone_walk(StandaloneWalk(url, out), region["rp_uuid"])
    finally:
        # NOTE: the app's background threads (reconciler, embedded agent)
        # would otherwise outlive the state directory.
        app.extensions["cyborg_lite"].stop()
        db.dispose()
    print("\nDemo finished: every step answered as expected.", file=out)
    return 0
