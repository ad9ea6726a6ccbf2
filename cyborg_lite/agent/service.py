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

"""Starting the agent's RPC server: as its own process or embedded.

Standalone (``cyborg-lite-agent``): one process per compute host on a real
broker. Embedded (the default): the API process starts the agent on the
in-process transport and its :class:`~cyborg_lite.agent.rpcapi.AgentAPI`
reaches it through the same shared transport object.
"""

import signal
import threading

from oslo_log import log as logging
import oslo_messaging
from oslo_messaging.rpc import dispatcher

from cyborg_lite.agent import exception
from cyborg_lite.agent import manager as agent_manager
from cyborg_lite.agent import transport as agent_transport

LOG = logging.getLogger(__name__)


class _Endpoint:
    """The manager as oslo.messaging sees it.

    NOTE(agent): agent errors are answers, not crashes: marking them as
    expected makes the RPC server send them back without logging a
    traceback, while the manager itself keeps raising plain exceptions.
    """

    def __init__(self, manager):
        self._manager = manager
        self.target = manager.target

    def __getattr__(self, name):
        attr = getattr(self._manager, name)
        if name.startswith("_") or not callable(attr):
            raise AttributeError(name)
        return oslo_messaging.expected_exceptions(exception.AgentError)(attr)


class AgentService:
    """An RPC server for topic ``cyborg-lite-agent``, server ``[agent] host``.

    :param conf: ConfigOpts with the ``[agent]`` options registered.
    :param transport: default: from ``[DEFAULT] transport_url``.
    :param manager: default: an AgentManager with the enabled drivers.
    """

    def __init__(self, conf, transport=None, manager=None):
        self.conf = conf
        self.transport = transport or agent_transport.get_transport(conf)
        self.manager = manager or agent_manager.AgentManager(conf)
        target = oslo_messaging.Target(topic=agent_transport.TOPIC,
                                       server=conf.agent.host)
        self.server = oslo_messaging.get_rpc_server(
            self.transport, target, [_Endpoint(self.manager)],
            executor="threading",
            access_policy=dispatcher.DefaultRPCAccessPolicy)
        self._started = False

    def start(self):
        """Start serving; returns at once."""
        self.server.start()
        self._started = True
        LOG.info("cyborg-lite agent serving topic %s as %s",
                 agent_transport.TOPIC, self.conf.agent.host)

    def stop(self):
        """Stop taking messages and wait for running calls to finish."""
        if self._started:
            self.server.stop()
            self.server.wait()
            self._started = False


def start_embedded(conf):
    """Start the agent inside this process on the in-process transport.

    :raises ValueError: when ``[DEFAULT] transport_url`` names a broker
        (then the agent runs as ``cyborg-lite-agent`` on each host).
    :returns: the started :class:`AgentService`.
    """
    if not agent_transport.is_in_process(conf):
        raise ValueError(
            f"[DEFAULT] transport_url is {conf.transport_url!r}: the "
            f"embedded agent needs the in-process transport (fake://)")
    service = AgentService(conf)
    service.start()
    return service


def run(conf):
    """Serve until SIGTERM or SIGINT (the ``cyborg-lite-agent`` process)."""
    if agent_transport.is_in_process(conf):
        raise SystemExit(
            "cyborg-lite-agent: [DEFAULT] transport_url is the in-process "
            "transport; set it to the message broker, e.g. "
            "rabbit://user:password@host:5672/")
    service = AgentService(conf)
    stop = threading.Event()

    def _signal(signum, frame):
        LOG.info("Signal %s received, stopping", signum)
        stop.set()

    signal.signal(signal.SIGTERM, _signal)
    signal.signal(signal.SIGINT, _signal)
    service.start()
    while not stop.wait(0.2):
        pass
    service.stop()
