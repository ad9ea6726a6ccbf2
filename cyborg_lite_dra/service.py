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

"""The plugin's gRPC services on unix sockets.

``<registry_dir>/<driver_name>-reg.sock``: the kubelet's plugin registration
(``pluginregistration.Registration``), naming the DRA socket and the
versions served there. ``<plugin_dir>/dra.sock``: the DRA node service,
``k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin`` and its ``v1beta1`` twin
(the same messages), both answered by one
:class:`cyborg_lite_dra.claims.Preparer`. With ``[dra] healthcheck_port``,
``grpc.health.v1.Health`` on that TCP port for the kubelet's gRPC liveness
probe: serving when both sockets answer a call, as the kubelet makes them.
"""

from concurrent import futures
import logging
import os
import threading

import grpc
from grpc_health.v1 import health_pb2
from grpc_health.v1 import health_pb2_grpc

from cyborg_lite_dra import claims
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

LOG = logging.getLogger(__name__)

PLUGIN_TYPE = "DRAPlugin"
SUPPORTED_VERSIONS = ("v1.DRAPlugin", "v1beta1.DRAPlugin")
DRA_SOCKET = "dra.sock"


def registration_socket(registry_dir, driver_name):
    """The registration socket the kubelet's plugin watcher finds."""
    return os.path.join(registry_dir, f"{driver_name}-reg.sock")


def dra_socket(plugin_dir):
    """The socket of the DRA node service."""
    return os.path.join(plugin_dir, DRA_SOCKET)


def _claims(request):
    return [claims.Claim(c.namespace, c.uid, c.name) for c in request.claims]


class DRAServicer:
    """The DRA node service of one API version (``api``: its messages)."""

    def __init__(self, api, preparer):
        self._api = api
        self._preparer = preparer

    def NodePrepareResources(self, request, context):
        answers = self._preparer.prepare(_claims(request))
        response = self._api.NodePrepareResourcesResponse()
        for uid, answer in answers.items():
            entry = response.claims[uid]
            if answer.error:
                entry.error = answer.error
                continue
            for device in answer.devices:
                entry.devices.add(request_names=device["requests"],
                                  pool_name=device["pool"],
                                  device_name=device["device"],
                                  cdi_device_ids=device["cdi_ids"])
        return response

    def NodeUnprepareResources(self, request, context):
        errors = self._preparer.unprepare(_claims(request))
        response = self._api.NodeUnprepareResourcesResponse()
        for uid, error in errors.items():
            response.claims[uid].error = error
        return response


def _v1_servicer(preparer):
    class V1(DRAServicer, dra_v1_grpc.DRAPluginServicer):
        pass
    return V1(dra_v1, preparer)


def _v1beta1_servicer(preparer):
    class V1beta1(DRAServicer, dra_v1beta1_grpc.DRAPluginServicer):
        pass
    return V1beta1(dra_v1beta1, preparer)


class RegistrationServicer(registration_grpc.RegistrationServicer):
    """Answers the kubelet's plugin watcher."""

    def __init__(self, driver_name, endpoint):
        self._driver_name = driver_name
        self._endpoint = endpoint
        self.registered = threading.Event()
        self.last_status = None

    def GetInfo(self, request, context):
        return registration.PluginInfo(
            type=PLUGIN_TYPE, name=self._driver_name,
            endpoint=self._endpoint,
            supported_versions=list(SUPPORTED_VERSIONS))

    def NotifyRegistrationStatus(self, request, context):
        self.last_status = (request.plugin_registered, request.error)
        if request.plugin_registered:
            LOG.info("Registered with the kubelet as %s", self._driver_name)
            self.registered.set()
        else:
            LOG.error("The kubelet refused the registration of %s: %s",
                      self._driver_name, request.error)
            self.registered.clear()
        return registration.RegistrationStatusResponse()


class HealthServicer(health_pb2_grpc.HealthServicer):
    """``grpc.health.v1.Health``: the service ``""`` or ``liveness`` is
    serving when the registration socket answers ``GetInfo`` and the DRA
    socket answers an empty ``NodePrepareResources`` (which waits for no
    claim, so a long programming does not make the plugin look dead)."""

    SERVICES = ("", "liveness")

    def __init__(self, registration_path, dra_path, timeout=5.0):
        self._timeout = timeout
        self._registration_path = registration_path
        self._dra_path = dra_path

    def _alive(self):
        # NOTE(dra): new connections each time, as the kubelet makes them:
        # a socket file removed under a running server still answers on a
        # connection opened before.
        with grpc.insecure_channel(
                f"unix://{self._registration_path}") as reg_channel, \
                grpc.insecure_channel(f"unix://{self._dra_path}") as channel:
            try:
                registration_grpc.RegistrationStub(reg_channel).GetInfo(
                    registration.InfoRequest(), timeout=self._timeout)
                dra_v1_grpc.DRAPluginStub(channel).NodePrepareResources(
                    dra_v1.NodePrepareResourcesRequest(),
                    timeout=self._timeout)
            except grpc.RpcError as error:
                LOG.warning("Health check: the plugin's sockets do not "
                            "answer: %s", error)
                return False
        return True

    def Check(self, request, context):
        if request.service not in self.SERVICES:
            context.abort(grpc.StatusCode.NOT_FOUND,
                          f"unknown service {request.service!r}")
        status = (health_pb2.HealthCheckResponse.SERVING if self._alive()
                  else health_pb2.HealthCheckResponse.NOT_SERVING)
        return health_pb2.HealthCheckResponse(status=status)


#: The longest path a unix socket can have (sun_path less its NUL).
MAX_SOCKET_PATH = 107


def _serve(path, add):
    if len(os.fsencode(path)) > MAX_SOCKET_PATH:
        raise OSError(f"cannot listen on {path}: a unix socket's path has "
                      f"at most {MAX_SOCKET_PATH} bytes")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.exists(path):
        # NOTE(dra): left by a plugin that did not stop cleanly.
        os.unlink(path)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    add(server)
    if not server.add_insecure_port(f"unix://{path}"):
        raise OSError(f"cannot listen on {path}")
    server.start()
    return server


class Sockets:
    """Both services, served until :meth:`stop`.

    The DRA socket is served first: the kubelet connects to it as soon as
    it sees the registration socket.
    """

    def __init__(self, conf, plugin_dir, preparer):
        driver = conf.dra.driver_name
        self.dra_path = dra_socket(plugin_dir)
        self.registration_path = registration_socket(conf.dra.registry_dir,
                                                     driver)
        self.registration = RegistrationServicer(driver, self.dra_path)

        def add_dra(server):
            dra_v1_grpc.add_DRAPluginServicer_to_server(
                _v1_servicer(preparer), server)
            dra_v1beta1_grpc.add_DRAPluginServicer_to_server(
                _v1beta1_servicer(preparer), server)

        self._servers = [_serve(self.dra_path, add_dra)]
        add_registration = registration_grpc.add_RegistrationServicer_to_server
        self._servers.append(_serve(
            self.registration_path,
            lambda server: add_registration(self.registration, server)))
        LOG.info("Serving %s on %s, registration on %s", driver,
                 self.dra_path, self.registration_path)
        self.health = None
        self._health_server = None
        if conf.dra.healthcheck_port >= 0:
            self.health = HealthServicer(self.registration_path,
                                         self.dra_path)
            self._health_server = grpc.server(
                futures.ThreadPoolExecutor(max_workers=2))
            health_pb2_grpc.add_HealthServicer_to_server(
                self.health, self._health_server)
            address = f"{conf.dra.healthcheck_address}:" \
                      f"{conf.dra.healthcheck_port}"
            self.health_port = self._health_server.add_insecure_port(address)
            if not self.health_port:
                self.stop(0)
                raise OSError(f"cannot listen on {address} for the health "
                              f"check")
            self._health_server.start()
            LOG.info("Serving grpc.health.v1.Health on %s:%d",
                     conf.dra.healthcheck_address, self.health_port)

    def stop(self, grace=5.0):
        """Stop serving; remove the registration socket first, so the
        kubelet sees the plugin go."""
        if self._health_server is not None:
            self._health_server.stop(grace).wait(grace)
            self._health_server = None
        for server, path in reversed(list(zip(
                self._servers, (self.dra_path, self.registration_path)))):
            server.stop(grace).wait(grace)
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
