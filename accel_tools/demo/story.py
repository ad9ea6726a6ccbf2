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

"""The demo's whole story, end to end, on services embedded on this host.

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
the failing component's log.
"""

import json
import os
import sys
import time
import uuid

import requests

from accel_common import clients
from accel_common.placement import client as placement_client
from accel_tools import request_groups
from accel_tools.demo import cyborg
from accel_tools.demo import identities
from accel_tools.demo import output
from accel_tools.embedded import common
from accel_tools.embedded import images
from accel_tools.embedded import ironic as ironic_launcher
from accel_tools.embedded import placement as placement_launcher
from accel_tools.embedded import stack as stack_mod
from cyborg_lite.inventory import ironic as ironic_inventory

#: The host the server becomes: Ironic node name = hypervisor host name =
#: compute-node resource provider name = the agent's [agent] host.
HOST = "compute-1.example.org"
#: The FPGA firmware the manual clean installs.
FIRMWARE_VERSION = "2.1.0"
#: The function the second device profile asks for (bind-time programming).
FUNCTION_ID = "nlb0"
#: Placement microversion of the demo's own calls (Nova's query syntax).
PLACEMENT_MV = "1.39"


def run(state_dir, verbose=False):
    """The whole story under ``state_dir``, printed to stdout.

    :returns: the exit code: 0 when every step answered as expected, 1
        at the first that did not.
    """
    out = sys.stdout
    walk = output.Walk(out)
    walk.say("ironic-accel demo: the device life cycle in Ironic, the "
             "application life cycle in cyborg_lite, Nova's part played "
             "by this script.")
    walk.say(f"State directory: {state_dir}")
    story = Story(state_dir, walk, verbose=verbose)
    try:
        story.run()
    except output.DemoFailed as exc:
        walk.summary(story.facts)
        walk.say()
        walk.say(f"Demo FAILED: {exc}")
        walk.say(f"(every component's log is under {state_dir}; "
                 "--keep keeps them)")
        return 1
    walk.say()
    walk.say("Demo finished: every step answered as expected.")
    return 0


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
        return common.log_tail(self.log_file, lines=30)

    def run(self):
        """All steps; raises :class:`~accel_tools.demo.output.DemoFailed` at
        the first failure."""
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

    def start_services(self):
        with self.walk.step("Start the services (free ports, state under "
                            f"{self.state_dir})",
                            ("bmc", "placement", "ironic", "cyborg_lite")):
            self.stack = stack_mod.IronicStack(self.state_dir)
            self.stack.start()
            stack = self.stack
            self.walk.detail(f"BMC emulator (Redfish)     {stack.bmc.url}"
                             "/redfish/v1  (CPU, FPGA with 2 slots, GPU)")
            self.walk.detail("Placement (sqlite, noauth2) "
                             f"{stack.placement.url}")
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
        self.cyborg = cyborg.start(
            os.path.join(self.state_dir, "cyborg_lite"), self.log_file,
            HOST, FUNCTION_ID, self.stack.placement.url,
            self.stack.ironic.url)
        self.api = output.Api(self.cyborg.url, self.walk,
                              verbose=self.verbose)

    def stop(self):
        """Stop cyborg_lite and the stack (best effort)."""
        if self.cyborg is not None:
            self.cyborg.close()
            self.cyborg = None
        if self.stack is not None:
            self.stack.stop()

    def register_compute_host(self):
        with self.walk.step("nova-compute registers the host in Placement",
                            ("placement",)):
            self.root_uuid, _ = placement_launcher.create_compute_node(
                self.placement, name=HOST, traits=["COMPUTE_ACCELERATORS"])
            self.walk.detail(f"compute node {HOST}  {self.root_uuid}  "
                             "traits: COMPUTE_ACCELERATORS")

    def enroll_and_manage(self):
        with self.walk.step("An operator enrolls the server in Ironic and "
                            "manages it (verify reads the BMC)",
                            ("ironic", "bmc")):
            node = ironic_launcher.enroll(self.baremetal, self.stack.bmc,
                                          name=HOST)
            self.walk.detail(f"node {node.id}  driver accel-redfish  -> "
                             "manage")
            node = ironic_launcher.manage(self.baremetal, node, timeout=90)
            if node.provision_state != "manageable":
                raise output.DemoFailed(f"node is {node.provision_state}: "
                                        f"{node.last_error}")
            self.node = node
            document = node.extra.get("accelerators")
            if not document:
                raise output.DemoFailed("no inventory document on the node")
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
                raise output.DemoFailed("clean ended in "
                                        f"{node.provision_state}: "
                                        f"{node.last_error}")
            self.node = node
            self.document = node.extra["accelerators"]
            confirmed = self._bmc_version(fpga["redfish_uri"])
            self.walk.detail(f"clean done; the BMC's FirmwareInventory "
                             f"reports {fpga['id']} at {confirmed}")
            if confirmed != FIRMWARE_VERSION:
                raise output.DemoFailed(f"the BMC reports {confirmed}, not "
                                        f"{FIRMWARE_VERSION}")
            versions = self._print_firmware("firmware components now")
            if versions.get(f"accel:{fpga['id']}") != FIRMWARE_VERSION:
                raise output.DemoFailed("Ironic's firmware components do "
                                        "not show the new version")
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
        raise output.DemoFailed(f"the BMC lists no firmware for {redfish_uri}")

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
                raise output.DemoFailed(f"providers not in Placement: "
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
            raise output.DemoFailed(f"Placement GET {path}: "
                                    f"{resp.status_code} {resp.text}")
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

    def sync_cyborg(self):
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
                raise output.DemoFailed(f"inventory sync: {summary}")
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
                raise output.DemoFailed(f"inventory sync: {summary}")
            applied = summary["applied"][0]
            self.walk.detail(
                "sync from Ironic (as 'cyborg-lite-manage inventory "
                "sync'): " + ", ".join(
                    f"{kind.replace('_', ' ')} " + " ".join(
                        f"{n} {what}" for what, n in counts.items() if n)
                    for kind, counts in applied.items()
                    if isinstance(counts, dict)))
            _, body = self.api.call("GET", "/v2/deployables",
                                    identities.ADMIN_HEADERS, expect=200)
            for dep in body["deployables"]:
                self.walk.detail(f"  deployable {dep['name']}  rp "
                                 f"{dep['rp_uuid']}  handles "
                                 f"{dep.get('num_accelerators')}")

    def first_profile(self):
        name = f"demo-fpga-{uuid.uuid4().hex[:6]}"
        groups = [{"resources:FPGA": "1",
                   "trait:CUSTOM_FPGA_INTEL_PAC_ARRIA10": "required"}]
        with self.walk.step("An operator creates a device profile: one "
                            "Arria10 FPGA region", ("cyborg_lite",)):
            self.api.call("POST", "/v2/device_profiles",
                          identities.ADMIN_HEADERS,
                          [{"name": name, "description": "one FPGA region",
                            "groups": groups}], expect=201)
            self.walk.detail(f"{name}: {json.dumps(groups)}")
        return name

    def schedule(self, profile, title=None):
        """Nova's scheduler: the profile's request groups, the allocation
        candidates, the claim. Returns ``(rp uuid, instance uuid)``."""
        instance = str(uuid.uuid4())
        with self.walk.step(title or "Nova schedules a server whose flavor "
                            "names the profile", ("cyborg_lite", "placement")):
            _, body = self.api.call(
                "GET", f"/v2/device_profiles?name={profile}",
                identities.NOVA_HEADERS, expect=200)
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
            self.walk.detail(
                f"<-- {len(requests_)} candidate(s): " + "; ".join(
                    names.get(c["mappings"]["device_profile_0"][0], "?")
                    for c in requests_))
            if not requests_:
                raise output.DemoFailed("no allocation candidates")
            chosen = requests_[0]
            rp_uuid = chosen["mappings"]["device_profile_0"][0]
            resp = self.placement.placement.put(
                f"/allocations/{instance}", microversion=PLACEMENT_MV,
                json={"allocations": chosen["allocations"],
                      "mappings": chosen["mappings"],
                      "project_id": identities.NOVA_HEADERS["X-Project-Id"],
                      "user_id": identities.NOVA_HEADERS["X-User-Id"],
                      "consumer_generation": None,
                      "consumer_type": "INSTANCE"})
            if resp.status_code != 204:
                raise output.DemoFailed(f"claiming the allocation: "
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
                f"{arq['attach_handle_type']} device {output.bdf(info)} -> "
                "<hostdev mode='subsystem' type='pci' managed='yes'>")
            self.facts.append(f"ARQ bound to {self._names().get(rp_uuid)}: "
                              f"PCI device {output.bdf(info)}")

    def _create_and_bind(self, profile, rp_uuid, instance, show=True):
        _, body = self.api.call("POST", "/v2/accelerator_requests",
                                identities.NOVA_HEADERS,
                                {"device_profile_name": profile}, expect=201)
        (arq,) = body["arqs"]
        patch = {arq["uuid"]: [
            {"op": "add", "path": "/hostname", "value": HOST},
            {"op": "add", "path": "/device_rp_uuid", "value": rp_uuid},
            {"op": "add", "path": "/instance_uuid", "value": instance}]}
        self.api.call("PATCH", "/v2/accelerator_requests",
                      identities.NOVA_HEADERS, patch, expect=202)
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
                raise output.DemoFailed("the ARQ was not resolved within 60 s")
            time.sleep(0.2)
        if locked:
            self.walk.detail(f"(nova-compute polled {locked} time(s): 423 "
                             f"Locked while the region was programmed, "
                             f"{time.monotonic() - began:.1f} s)")
        status, body = self.api.call("GET", path, identities.NOVA_HEADERS,
                                     expect=200, show=show)
        (arq,) = body["arqs"]
        if arq["state"] != "Bound":
            raise output.DemoFailed(f"ARQ {arq['uuid']} is {arq['state']}")
        return arq

    def _quiet_get(self, path):
        response = requests.get(self.cyborg.url + path,
                                headers=identities.NOVA_HEADERS, timeout=60)
        return response.status_code, None

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
            self.api.call("POST", "/v2/device_profiles",
                          identities.ADMIN_HEADERS,
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
                raise output.DemoFailed("no function trait for "
                                        f"{FUNCTION_ID} on {rp_uuid}: "
                                        f"{after}")
            self.walk.detail(f"ARQ {arq['uuid']}: {arq['state']}, PCI "
                             f"device {output.bdf(arq['attach_handle_info'])}")
            self.facts.append(f"region programmed with {FUNCTION_ID} at "
                              f"bind time; Placement trait {after[0]}")

    def delete_instances(self):
        with self.walk.step("The servers are deleted: Nova deletes their "
                            "ARQs and allocations", ("cyborg_lite",
                                                     "placement")):
            for instance in self.instances:
                self.api.call("DELETE", f"/v2/accelerator_requests?"
                              f"instance={instance}", identities.NOVA_HEADERS,
                              expect=204)
                resp = self.placement.placement.delete(
                    f"/allocations/{instance}", microversion=PLACEMENT_MV)
                if resp.status_code != 204:
                    raise output.DemoFailed("deleting allocations of "
                                            f"{instance}: "
                                            f"{resp.status_code} {resp.text}")
                _, body = self.api.call(
                    "GET", f"/v2/accelerator_requests?instance={instance}",
                    identities.NOVA_HEADERS, expect=200)
                if body["arqs"]:
                    raise output.DemoFailed(f"ARQs left for {instance}")
            self.walk.detail(f"{len(self.instances)} instance(s): no ARQs "
                             "left, allocations removed, handles free again")
