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

"""The demo's Kubernetes walk (``cyborg-lite-demo --kubernetes``): a
container gets an FPGA region through the DRA kubelet plugin.

No Kubernetes runs here. cyborg_lite (noauth, its sim agent programming the
example FPGA) is served on a free local port; a stand-in API server
(:mod:`accel_tools.kube_standin`) holds the ResourceSlices and the
ResourceClaim the scheduler would have allocated; ``cyborg-lite-dra-plugin``
runs as its own process and is called over its unix sockets as the kubelet
calls it; podman (with runc), when it can run here, starts the container
from the CDI ID the plugin answers.
"""

import configparser
import hashlib
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

import grpc
import requests

from accel_tools import devserver
from accel_tools import kube_standin
from accel_tools import standalone
from accel_tools.demo import example_inventory
from accel_tools.demo import identities
from accel_tools.demo import output
from cyborg_lite import service
from cyborg_lite.agent.drivers import sim
from cyborg_lite.api import app as app_mod
from cyborg_lite.db import engine as db_engine
from cyborg_lite.inventory import apply as inventory_apply
from cyborg_lite_dra.conf import dra as dra_conf
from cyborg_lite_dra.kubelet.dra.v1 import api_pb2 as dra_api
from cyborg_lite_dra.kubelet.dra.v1 import api_pb2_grpc as dra_grpc
from cyborg_lite_dra.kubelet.pluginregistration.v1 import (
    api_pb2 as registration,
)
from cyborg_lite_dra.kubelet.pluginregistration.v1 import (
    api_pb2_grpc as registration_grpc,
)

DRIVER = dra_conf.DEFAULT_DRIVER_NAME
NODE = "k8s-node-1.example.org"
FUNCTION = "nlb0"
BIN = pathlib.Path(sys.executable).parent
#: podman 4.3 reads CDI specs only from /etc/cdi and /var/run/cdi.
RUNTIME_CDI_DIR = "/var/run/cdi"
PODMAN = ["podman", "run", "--rm", "--runtime", "runc", "--network", "none",
          "--ulimit", "nofile=20000:20000",
          "--ulimit", "nproc=32768:32768"]


def _podman_problem():
    """Why podman cannot run a container here, or None."""
    if os.geteuid() != 0:
        return "podman runs containers here only as root"
    for tool in ("podman", "runc", "busybox"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (apt-get install podman runc " \
                   f"busybox-static)"
    return None


def _start_cyborg(directory):
    """cyborg_lite with the sim agent on the example inventory, as NODE."""
    directory.mkdir(parents=True, exist_ok=True)
    conf = service.new_conf()
    service.prepare([], conf=conf, default_config_files=[],
                    setup_logging=False)
    with open(example_inventory.find(), encoding="utf-8") as handle:
        document = json.load(handle)
    document["host"] = NODE
    inventory_path = directory / "host-devices.json"
    inventory_path.write_text(json.dumps(document))
    catalog = directory / "images"
    catalog.mkdir()
    content = f"demo bitstream for {FUNCTION}\n".encode()
    (catalog / f"{FUNCTION}.gbs").write_bytes(content)
    (catalog / "index.json").write_text(json.dumps({"images": [{
        "id": f"img-{FUNCTION}", "function_id": FUNCTION,
        "file": f"{FUNCTION}.gbs",
        "sha256": hashlib.sha256(content).hexdigest()}]}))
    sets = {
        (None, "state_path"): str(directory),
        (None, "auth_strategy"): "noauth",
        ("database", "connection"):
            f"sqlite:///{directory}/cyborg_lite.sqlite",
        ("agent", "host"): NODE,
        ("agent", "sim_state_dir"): str(directory / "sim"),
        ("agent", "sim_inventory_file"): str(inventory_path),
        ("agent", "image_catalog_dir"): str(catalog),
        ("agent", "sim_program_seconds"): 1.0,
    }
    # NOTE(demo): the standalone settings (noauth's roles, the agent inside
    # the API with its sim driver) are set explicitly: none is a default.
    standalone.apply(conf)
    for (group, name), value in sets.items():
        conf.set_override(name, value, group=group)
    db = db_engine.Database.from_conf(conf)
    db.sync()
    inventory_apply.apply_document(db, document)
    app = app_mod.create_app(conf, db=db)
    serving = devserver.serve_in_thread(app)
    url = serving.__enter__()
    return conf, db, app, serving, url, document


def _write_plugin_conf(path, sockets, cdi_dir, kubeconfig, cyborg_url):
    parser = configparser.ConfigParser(interpolation=None)
    parser["DEFAULT"] = {"log_file": str(path.parent / "plugin.log")}
    parser["dra"] = {"node_name": NODE,
                     "registry_dir": str(sockets / "registry"),
                     "plugin_dir": str(sockets / "plugin"),
                     "cdi_dir": str(cdi_dir), "kubeconfig": kubeconfig,
                     "simulated_device_node": "/dev/null",
                     "publish_interval": "2",
                     # NOTE(demo): a free local port, not the DaemonSet's.
                     "healthcheck_port": "0",
                     "healthcheck_address": "127.0.0.1"}
    parser["cyborg"] = {"auth_type": "none",
                        "endpoint_override": f"{cyborg_url}/v2"}
    with open(path, "w") as f:
        parser.write(f)


def _wait(predicate, what, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise output.DemoFailed(f"timed out waiting for {what}")


def run(state_dir):
    """The walk; returns the exit code (0: every step as expected)."""
    state = pathlib.Path(state_dir)
    walk = output.Walk(sys.stdout, logs={
        "plugin": lambda: (state / "plugin.log").read_text()})
    walk.say("cyborg_lite demo, Kubernetes: a container gets an FPGA region "
             "through the DRA kubelet plugin")
    problem = _podman_problem()
    cdi_dir = RUNTIME_CDI_DIR if problem is None else state / "cdi"
    # NOTE(demo): a unix socket's path has at most 107 bytes.
    sockets = pathlib.Path(tempfile.mkdtemp(prefix="dra-demo-", dir="/tmp"))
    conf, db, app, serving, url, document = _start_cyborg(state / "cyborg")
    apiserver = kube_standin.KubeApiServer()
    plugin = None
    channels = []
    try:
        with walk.step("Start cyborg_lite, the API server stand-in and "
                       "cyborg-lite-dra-plugin", ["plugin"]):
            walk.detail(f"cyborg_lite at {url} (noauth, sim agent), node "
                        f"{NODE}")
            walk.detail(f"API server stand-in at {apiserver.url}")
            config = state / "plugin.conf"
            _write_plugin_conf(config, sockets, cdi_dir,
                               apiserver.kubeconfig(state / "kubeconfig"),
                               url)
            plugin = subprocess.Popen(
                [str(BIN / "cyborg-lite-dra-plugin"), "--config-file",
                 str(config)], stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, start_new_session=True)
            reg_socket = sockets / "registry" / f"{DRIVER}-reg.sock"
            _wait(reg_socket.exists, "the registration socket")
            channel = grpc.insecure_channel(f"unix://{reg_socket}")
            channels.append(channel)
            info = registration_grpc.RegistrationStub(channel).GetInfo(
                registration.InfoRequest(), timeout=10)
            walk.detail(f"kubelet's GetInfo: type {info.type}, name "
                        f"{info.name}, endpoint {info.endpoint}, versions "
                        f"{', '.join(info.supported_versions)}")

        with walk.step("The plugin publishes the node's devices as a "
                       "ResourceSlice", ["plugin"]):
            slice_ = _wait(lambda: next(iter(apiserver.slices.values()),
                                        None), "the ResourceSlice")
            walk.detail(f"ResourceSlice {slice_['metadata']['name']}, pool "
                        f"{slice_['spec']['pool']}")
            for device in slice_["spec"]["devices"]:
                attrs = device["attributes"]
                where = (f"region {attrs['region']['string']}"
                         if "region" in attrs else "whole card")
                walk.detail(f"  {device['name']}: {attrs['type']['string']}"
                            f" {where}")
            fpga = next(d for d in slice_["spec"]["devices"]
                        if d["attributes"]["type"]["string"] == "FPGA")

        with walk.step(f"The scheduler allocates {fpga['name']} to a claim "
                       f"whose class asks for function {FUNCTION}"):
            profile = f"k8s-{FUNCTION}-{uuid.uuid4().hex[:6]}"
            response = requests.post(
                f"{url}/v2/device_profiles", timeout=30,
                headers=identities.ADMIN_HEADERS,
                json=[{"name": profile, "groups": [{
                    "resources:FPGA": "1",
                    "accel:function_id": FUNCTION}]}])
            if response.status_code != 201:
                raise output.DemoFailed(f"device profile: {response.text}")
            claim = apiserver.add_claim("default", "fpga-claim", [
                {"request": "fpga", "driver": DRIVER, "pool": NODE,
                 "device": fpga["name"]}], [
                {"source": "FromClass", "requests": [],
                 "opaque": {"driver": DRIVER,
                            "parameters": {"deviceProfile": profile}}}])
            uid = claim["metadata"]["uid"]
            walk.detail(f"ResourceClaim default/fpga-claim, uid {uid}; "
                        f"DeviceClass config {{\"deviceProfile\": "
                        f"\"{profile}\"}}")

        dra_socket = sockets / "plugin" / "dra.sock"
        channel = grpc.insecure_channel(f"unix://{dra_socket}")
        channels.append(channel)
        stub = dra_grpc.DRAPluginStub(channel)
        request_claim = dra_api.Claim(namespace="default", uid=uid,
                                      name="fpga-claim")
        with walk.step("The kubelet calls NodePrepareResources: bind, "
                       "program the region, write the CDI spec", ["plugin"]):
            for _ in range(10):
                answer = stub.NodePrepareResources(
                    dra_api.NodePrepareResourcesRequest(
                        claims=[request_claim]), timeout=45).claims[uid]
                if not answer.error:
                    break
                walk.detail(f"answer: {answer.error}")
            if answer.error:
                raise output.DemoFailed(answer.error)
            cdi_id = answer.devices[0].cdi_device_ids[0]
            walk.detail(f"CDI device ID: {cdi_id}")
            (arq,) = requests.get(
                f"{url}/v2/accelerator_requests?instance={uid}",
                headers=identities.ADMIN_HEADERS, timeout=30).json()["arqs"]
            walk.detail(f"ARQ {arq['uuid']}: {arq['state']}, instance "
                        f"{arq['instance_uuid']}, host {arq['hostname']}")
            region = next(
                r for r in sim.read_state(str(state / "cyborg" / "sim"))[
                    document["devices"][0]["pci_address"]]["regions"]
                if r["id"] == fpga["attributes"]["region"]["string"])
            walk.detail(f"region {region['id']} now runs "
                        f"{region['function_id']} (sim agent)")
            spec_path = next(pathlib.Path(cdi_dir).glob(f"*_{uid}.json"))
            walk.detail(f"CDI spec {spec_path}:")
            walk.detail(spec_path.read_text())

        with walk.step("A container started with --device <CDI ID> sees "
                       "its device"):
            if problem:
                walk.detail(f"skipped: {problem}")
            else:
                _run_container(walk, state, cdi_id)

        with walk.step("The pod is gone: NodeUnprepareResources (the claim "
                       "object already deleted)", ["plugin"]):
            apiserver.delete_claim("default", "fpga-claim")
            answer = stub.NodeUnprepareResources(
                dra_api.NodeUnprepareResourcesRequest(
                    claims=[request_claim]), timeout=45).claims[uid]
            if answer.error:
                raise output.DemoFailed(answer.error)
            left = requests.get(
                f"{url}/v2/accelerator_requests?instance={uid}",
                headers=identities.ADMIN_HEADERS, timeout=30).json()["arqs"]
            walk.detail(f"ARQs of the claim left in cyborg_lite: {len(left)};"
                        f" CDI spec present: {spec_path.exists()}")
            if left or spec_path.exists():
                raise output.DemoFailed("unprepare left something behind")
    except output.DemoFailed as error:
        walk.say(f"\nDemo failed: {error}")
        return 1
    finally:
        for channel in channels:
            channel.close()
        if plugin is not None:
            plugin.send_signal(signal.SIGTERM)
            plugin.wait(20)
        apiserver.stop()
        serving.__exit__(None, None, None)
        app.extensions["cyborg_lite"].stop()
        db.dispose()
        shutil.rmtree(sockets, ignore_errors=True)
    walk.say("\nDemo finished: every step answered as expected.")
    return 0


def _run_container(walk, state, cdi_id):
    root = state / "rootfs"
    (root / "bin").mkdir(parents=True)
    shutil.copy(shutil.which("busybox"), root / "bin" / "busybox")
    for applet in ("sh", "env", "ls"):
        (root / "bin" / applet).symlink_to("busybox")
    tar = state / "busybox.tar"
    subprocess.run(["tar", "-C", str(root), "-cf", str(tar), "."],
                   check=True)
    tag = f"localhost/cyborg-lite-demo:{uuid.uuid4().hex[:8]}"
    subprocess.run(["podman", "import", str(tar), tag], check=True,
                   capture_output=True, timeout=300)
    try:
        command = PODMAN + ["--device", cdi_id, tag, "/bin/sh", "-c",
                            "ls -l /dev/cyborg-lite; env | grep PCIDEVICE"]
        walk.detail("$ " + " ".join(command))
        run = subprocess.run(command, capture_output=True, text=True,
                             timeout=300)
        walk.detail(run.stdout.rstrip())
        if run.returncode or "PCIDEVICE_" not in run.stdout:
            raise output.DemoFailed(f"podman: {run.stderr.strip()}")
    finally:
        subprocess.run(["podman", "rmi", "-f", tag], capture_output=True,
                       timeout=120)
