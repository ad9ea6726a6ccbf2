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

"""The DRA plugin's test bench: a real cyborg_lite (API, programmer and sim
agent in this process, served over HTTP), the stand-in API server, and the
plugin as its own process (``cyborg-lite-dra-plugin``) called over its
unix sockets by gRPC clients generated from the same protos, as the kubelet
calls it."""

import configparser
import contextlib
import hashlib
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

import grpc
from grpc_health.v1 import health_pb2
from grpc_health.v1 import health_pb2_grpc
import requests

from accel_common import inventory
from accel_tools import devserver
from accel_tools import standalone
from cyborg_lite import service
from cyborg_lite.agent.drivers import sim
from cyborg_lite.api import app as app_mod
from cyborg_lite.db import engine as db_engine
from cyborg_lite.inventory import apply as inventory_apply
from cyborg_lite_dra.kubelet.dra.v1 import api_pb2 as dra_v1
from cyborg_lite_dra.kubelet.dra.v1 import api_pb2_grpc as dra_v1_grpc
from cyborg_lite_dra.kubelet.dra.v1beta1 import api_pb2 as dra_v1beta1
from cyborg_lite_dra.kubelet.dra.v1beta1 import (
    api_pb2_grpc as dra_v1beta1_grpc,
)
from cyborg_lite_dra.kubelet.pluginregistration.v1 import (
    api_pb2 as registration,
)
from cyborg_lite_dra.kubelet.pluginregistration.v1 import (
    api_pb2_grpc as registration_grpc,
)
from tests.fixtures.cyborg_server import make_inventory

BIN = pathlib.Path(sys.executable).parent
DRIVER = "accel.cyborg-lite.openstack.org"

#: An operator, as noauth reads the identity headers.
ADMIN = {"X-Project-Id": "admin-project", "X-User-Id": "admin",
         "X-Roles": "admin"}
#: The functions of the test image catalog.
FUNCTIONS = ("nlb0", "nlb3", "gzip")

#: API version -> (messages module, stub class).
APIS = {"v1": (dra_v1, dra_v1_grpc.DRAPluginStub),
        "v1beta1": (dra_v1beta1, dra_v1beta1_grpc.DRAPluginStub)}


def _make_catalog(directory):
    """cyborg_lite's standalone image catalog with one image per
    function of :data:`FUNCTIONS`."""
    directory.mkdir(parents=True)
    images = []
    for function in FUNCTIONS:
        content = f"{function} bits".encode()
        (directory / f"{function}.gbs").write_bytes(content)
        images.append({"id": f"img-{function}", "function_id": function,
                       "file": f"{function}.gbs",
                       "sha256": hashlib.sha256(content).hexdigest()})
    (directory / "index.json").write_text(json.dumps({"images": images}))
    return str(directory)


#: The whole GPU of :class:`CyborgLite` with ``gpu=True``: one region, its
#: only attach handle the card itself (as the example inventory's T4).
GPU_PCI = "0000:af:00.0"


def _gpu(node_uuid):
    return {"id": "gpu0", "type": "GPU", "vendor_id": "0x10de",
            "product_id": "0x1eb8", "vendor": "NVIDIA", "model": "Tesla T4",
            "pci_address": GPU_PCI, "redfish_uri": None,
            "firmware_version": "90.04.38.00.03", "program_mode": "single",
            "regions": [{
                "id": "0", "resource_class": "PGPU", "function_id": None,
                "rp_uuid": inventory.region_rp_uuid(node_uuid, "gpu0", "0"),
                "attach_handles": [{"type": "PCI",
                                    "pci_address": GPU_PCI}]}]}


class CyborgLite:
    """cyborg_lite on sqlite with its programmer and the sim agent (one
    dynamic FPGA, 2 regions of 2 PCI handles; with ``gpu`` a whole GPU
    too), served on a free port; ``auth_strategy = noauth`` set
    explicitly, or ``keystone`` behind the given
    :class:`tests.fixtures.keystone.Keystone`."""

    def __init__(self, directory, program_seconds=0.3, keystone=None,
                 extra="", gpu=False):
        directory.mkdir(parents=True, exist_ok=True)
        self.document = make_inventory(handles_per_region=(2, 2))
        if gpu:
            self.document["devices"].append(
                _gpu(self.document["node_uuid"]))
            inventory.validate(self.document)
        self.host = self.document["host"]
        self.device = self.document["devices"][0]
        self.pci = self.device["pci_address"]
        self.rps = [r["rp_uuid"] for r in self.device["regions"]]
        self.state_dir = str(directory / "sim")
        inventory_file = directory / "inventory.json"
        inventory_file.write_text(json.dumps(self.document))
        catalog = _make_catalog(directory / "catalog")
        config = directory / "cyborg_lite.conf"
        # NOTE(tests): the standalone settings first (the agent inside the
        # API, the sim driver, noauth's roles); what follows wins.
        config.write_text(
            standalone.ini_text() +
            f"[DEFAULT]\n"
            f"auth_strategy = {'keystone' if keystone else 'noauth'}\n"
            f"state_path = {directory}\n"
            f"[database]\nconnection = sqlite:///{directory}/cyborg.sqlite\n"
            f"[agent]\nhost = dra-{uuid.uuid4().hex[:12]}\n"
            f"sim_state_dir = {self.state_dir}\n"
            f"sim_inventory_file = {inventory_file}\n"
            f"image_catalog_dir = {catalog}\n"
            f"sim_program_seconds = {program_seconds}\nrpc_timeout = 30\n"
            f"[programming]\nheartbeat_interval = 0.2\n"
            f"reconcile_on_start = false\nreconcile_interval = 0\n"
            + (keystone.authtoken_config() if keystone else "") + extra)
        self.conf = service.new_conf()
        service.prepare(["--config-file", str(config)], conf=self.conf,
                        default_config_files=[], setup_logging=False)
        self.db = db_engine.Database.from_conf(self.conf)
        self.db.sync()
        inventory_apply.apply_document(self.db, self.document)
        self.app = app_mod.create_app(self.conf, db=self.db)
        self._serving = devserver.serve_in_thread(self.app)
        self.url = self._serving.__enter__()
        self.session = requests.Session()

    def call(self, method, path, headers, json=None):
        """One request to the API; returns ``(status, JSON or None)``."""
        response = self.session.request(method, self.url + path,
                                        headers=headers, json=json,
                                        timeout=60)
        try:
            return response.status_code, response.json()
        except ValueError:
            return response.status_code, None

    def profile(self, function_id=None, amount=1, headers=ADMIN,
                resource_class="FPGA"):
        """A device profile (asking for ``function_id``); its name."""
        group = {f"resources:{resource_class}": str(amount)}
        if function_id:
            group["accel:function_id"] = function_id
        name = f"dp-{uuid.uuid4().hex[:10]}"
        status, body = self.call("POST", "/v2/device_profiles", headers,
                                 [{"name": name, "groups": [group]}])
        assert status == 201, body
        return name

    def arqs(self, headers=ADMIN):
        """Every ARQ, as the admin sees them."""
        status, body = self.call("GET", "/v2/accelerator_requests", headers)
        assert status == 200, body
        return body["arqs"]

    def arqs_of(self, instance):
        return [a for a in self.arqs() if a["instance_uuid"] == instance]

    def region(self, index=0):
        """The sim driver's state of region ``index``."""
        device = sim.read_state(self.state_dir)[self.pci]
        return next(r for r in device["regions"] if r["id"] == str(index))

    def close(self):
        with contextlib.suppress(Exception):
            self._serving.__exit__(None, None, None)
        services = self.app.extensions["cyborg_lite"]
        with contextlib.suppress(Exception):
            services.stop()
        with contextlib.suppress(Exception):
            services.notifier.shutdown()
        self.db.dispose()


class Plugin:
    """``cyborg-lite-dra-plugin`` in its own process, on ``cyborg`` and the
    stand-in ``apiserver``; ``options`` are ``{"group.name": value}``."""

    def __init__(self, directory, cyborg, apiserver, **options):
        self.directory = pathlib.Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        # NOTE(dra): a unix socket's path has at most 107 bytes; pytest's
        # directories are longer.
        self.sockets = pathlib.Path(tempfile.mkdtemp(prefix="dra-",
                                                     dir="/tmp"))
        self.registry_dir = self.sockets / "registry"
        self.plugin_dir = self.sockets / "plugin"
        self.cdi_dir = pathlib.Path(options.pop("dra.cdi_dir", None)
                                    or self.directory / "cdi")
        self.node = cyborg.host
        self.config_file = self.directory / "plugin.conf"
        self.log_file = self.directory / "plugin.log"
        values = {
            "DEFAULT.debug": "true",
            "dra.node_name": self.node,
            "dra.registry_dir": self.registry_dir,
            "dra.plugin_dir": self.plugin_dir,
            "dra.cdi_dir": self.cdi_dir,
            "dra.kubeconfig": apiserver.kubeconfig(
                self.directory / "kubeconfig"),
            "dra.simulated_device_node": "/dev/null",
            "dra.publish_interval": 1,
            "dra.poll_interval": 0.1,
            "dra.healthcheck_port": 0,
            "dra.healthcheck_address": "127.0.0.1",
            "cyborg.auth_type": "none",
            "cyborg.endpoint_override": f"{cyborg.url}/v2",
        }
        values.update(options)
        parser = configparser.ConfigParser(interpolation=None)
        parser.optionxform = str
        for key, value in values.items():
            group, _, name = key.partition(".")
            if group != "DEFAULT" and group not in parser:
                parser[group] = {}
            parser[group][name] = str(value)
        with open(self.config_file, "w") as f:
            parser.write(f)
        self.process = None
        self.channels = []

    @property
    def registration_socket(self):
        return self.registry_dir / f"{DRIVER}-reg.sock"

    @property
    def dra_socket(self):
        return self.plugin_dir / "dra.sock"

    def start(self, timeout=30):
        """Start the process; wait until its registration answers."""
        log = open(self.log_file, "ab")
        try:
            self.process = subprocess.Popen(
                [str(BIN / "cyborg-lite-dra-plugin"), "--config-file",
                 str(self.config_file)],
                stdout=log, stderr=log, start_new_session=True)
        finally:
            log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the plugin exited "
                                   f"{self.process.returncode}:\n{self.log()}")
            if self.registration_socket.exists():
                try:
                    self.info(timeout=2)
                    return self
                except grpc.RpcError:
                    pass
            time.sleep(0.1)
        raise RuntimeError(f"the plugin did not register within {timeout}s:"
                           f"\n{self.log()}")

    def stop(self, timeout=20):
        """SIGTERM, as the kubelet's pod shutdown sends; returns its code."""
        for channel in self.channels:
            channel.close()
        self.channels = []
        if self.process is None or self.process.poll() is not None:
            return self.process and self.process.returncode
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(5)
            raise

    def kill(self):
        """SIGKILL: the plugin dies without cleaning up anything."""
        for channel in self.channels:
            channel.close()
        self.channels = []
        self.process.kill()
        self.process.wait(10)

    def close(self):
        """Stop and remove the socket directory (and its checkpoint)."""
        self.stop()
        shutil.rmtree(self.sockets, ignore_errors=True)

    def log(self):
        try:
            return "\n".join(self.log_file.read_text().splitlines()[-80:])
        except OSError:
            return "(no log)"

    def _channel(self, path):
        return self._channel_to(f"unix://{path}")

    def _channel_to(self, target):
        channel = grpc.insecure_channel(target)
        self.channels.append(channel)
        return channel

    def info(self, timeout=10):
        stub = registration_grpc.RegistrationStub(
            self._channel(self.registration_socket))
        return stub.GetInfo(registration.InfoRequest(), timeout=timeout)

    def notify(self, registered, error=""):
        stub = registration_grpc.RegistrationStub(
            self._channel(self.registration_socket))
        return stub.NotifyRegistrationStatus(registration.RegistrationStatus(
            plugin_registered=registered, error=error), timeout=10)

    def prepare(self, claims, version="v1", timeout=45):
        """NodePrepareResources as the kubelet calls it (45 s).

        :param claims: ``[(namespace, uid, name)]``.
        :returns: ``{uid: (error, [(requests, pool, device, cdi ids)])}``.
        """
        api, stub_class = APIS[version]
        stub = stub_class(self._channel(self.dra_socket))
        response = stub.NodePrepareResources(
            api.NodePrepareResourcesRequest(claims=[
                api.Claim(namespace=ns, uid=uid, name=name)
                for ns, uid, name in claims]), timeout=timeout)
        return {uid: (entry.error, [
            (list(d.request_names), d.pool_name, d.device_name,
             list(d.cdi_device_ids)) for d in entry.devices])
            for uid, entry in response.claims.items()}

    def unprepare(self, claims, version="v1", timeout=45):
        """NodeUnprepareResources; returns ``{uid: error}``."""
        api, stub_class = APIS[version]
        stub = stub_class(self._channel(self.dra_socket))
        response = stub.NodeUnprepareResources(
            api.NodeUnprepareResourcesRequest(claims=[
                api.Claim(namespace=ns, uid=uid, name=name)
                for ns, uid, name in claims]), timeout=timeout)
        return {uid: entry.error for uid, entry in response.claims.items()}

    def health(self, service="liveness", timeout=10):
        """The health service's answer, as the kubelet's gRPC probe asks
        (the port the plugin logged)."""
        ports = re.findall(r"Serving grpc\.health\.v1\.Health on "
                           r"127\.0\.0\.1:(\d+)", self.log_text())
        stub = health_pb2_grpc.HealthStub(
            self._channel_to(f"127.0.0.1:{ports[-1]}"))
        return stub.Check(health_pb2.HealthCheckRequest(service=service),
                          timeout=timeout).status

    def log_text(self):
        try:
            return self.log_file.read_text()
        except OSError:
            return ""

    def checkpoint(self):
        path = self.plugin_dir / "checkpoint.json"
        return json.loads(path.read_text()) if path.exists() else None

    def cdi_spec(self, uid):
        """The CDI spec the plugin wrote for claim ``uid``."""
        return json.loads((self.cdi_dir / f"{DRIVER}-accelerator_{uid}.json")
                          .read_text())


def wait(predicate, what, timeout=30):
    """Poll ``predicate`` until it returns something true; return that."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def handle_address(arq):
    """The PCI address of the attach handle a bound ARQ got."""
    info = arq["attach_handle_info"]
    return (f"{info['domain']}:{info['bus']}:{info['device']}."
            f"{info['function']}")


def device_status(apiserver, claim):
    """The claim's ``status.devices``, once the plugin wrote it (in the
    background after the prepare)."""
    namespace, _, name = claim
    return wait(lambda: apiserver.claims[(namespace, name)]["status"].get(
        "devices"), "the claim's device status")


def allocate(apiserver, plugin, device, profile=None, request="accel",
             namespace="default", name=None, config_source="FromClass"):
    """An allocated ResourceClaim for ``device`` of the plugin's node
    (with ``profile`` in its class's opaque configuration); returns
    ``(namespace, uid, name)`` as the kubelet names it."""
    name = name or f"claim-{uuid.uuid4().hex[:8]}"
    config = []
    if profile:
        config.append({"source": config_source, "requests": [request],
                       "opaque": {"driver": DRIVER,
                                  "parameters": {"deviceProfile": profile}}})
    body = apiserver.add_claim(namespace, name, [
        {"request": request, "driver": DRIVER, "pool": plugin.node,
         "device": device}], config)
    return namespace, body["metadata"]["uid"], name
