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

"""The client the API uses to ask a host's agent for host work.

Every call is addressed to one host (``server = [agent] host`` of that
agent) and carries a timeout *and* a bounded broker retry, so an unreachable
broker or a dead agent fails the caller quickly with a clear
:mod:`~cyborg_lite.agent.exception` error instead of hanging it. Long calls
(programming) also carry a heartbeat timeout: an agent that dies mid-way is
noticed within ``[agent] rpc_heartbeat_timeout`` seconds. Each call carries
the ids of the request it serves (:func:`cyborg_lite.context.for_rpc`), so
the agent's log lines of that call carry them too.
"""

import oslo_messaging

from cyborg_lite import context
from cyborg_lite.agent import exception
from cyborg_lite.agent import transport as agent_transport

_REMOTE_SUFFIX = "_Remote"


def _local(exc):
    """Rebuild a remote agent error as its plain class (oslo.messaging
    appends the remote traceback to the message of a ``*_Remote`` copy)."""
    for cls in type(exc).__mro__:
        if (issubclass(cls, exception.AgentError)
                and not cls.__name__.endswith(_REMOTE_SUFFIX)):
            return cls(exc.message, **exc.kwargs)
    return exc


class AgentAPI:
    """RPC client of ``cyborg-lite-agent``; one instance per process.

    :param conf: ConfigOpts with cyborg_lite's ``[agent]`` options.
    :param transport: an oslo.messaging transport (default: from
        ``[DEFAULT] transport_url``; the in-process one is shared).
    """

    def __init__(self, conf, transport=None):
        self.conf = conf
        self.transport = transport or agent_transport.get_transport(conf)
        target = oslo_messaging.Target(topic=agent_transport.TOPIC,
                                       version="1.0")
        self.client = oslo_messaging.get_rpc_client(self.transport, target)
        self._broker_checked = agent_transport.is_in_process(conf)

    def _check_broker(self, host, method, retry):
        """Fail fast when the broker is unreachable on the first call.

        NOTE(agent): oslo.messaging opens the connection of a call's reply
        queue without the call's ``retry`` (it retries forever), so the very
        first call of a process would hang on a dead broker. A cast to a
        topic nobody consumes opens a send connection, which honours
        ``retry``; once a call has succeeded the reply queue exists and
        every later send honours ``retry`` again.
        """
        if self._broker_checked:
            return
        probe = self.client.prepare(topic=agent_transport.PROBE_TOPIC,
                                    retry=retry)
        try:
            probe.cast({}, "probe")
        # NOTE(agent): kombu's OperationalError escapes oslo.messaging here.
        except Exception as exc:
            raise exception.AgentUnreachable(host=host, method=method,
                                             attempts=retry + 1,
                                             reason=str(exc))

    def _call(self, host, method, timeout=None, heartbeat=False, **kwargs):
        if not host:
            raise exception.InvalidRequest(reason="no agent host given")
        agent = self.conf.agent
        timeout = timeout or agent.rpc_timeout
        retry = agent.rpc_retry
        prepare = {"server": host, "timeout": timeout, "retry": retry}
        if heartbeat:
            prepare["call_monitor_timeout"] = min(
                agent.rpc_heartbeat_timeout, timeout)
        self._check_broker(host, method, retry)
        cctxt = self.client.prepare(**prepare)
        try:
            result = cctxt.call(context.for_rpc(), method, **kwargs)
            self._broker_checked = True
            return result
        except oslo_messaging.MessagingTimeout:
            waited = f"within {timeout} s"
            if heartbeat:
                waited += (f" (or sent no heartbeat for "
                           f"{prepare['call_monitor_timeout']} s)")
            raise exception.AgentTimeout(host=host, method=method,
                                         waited=waited)
        except oslo_messaging.MessageDeliveryFailure as exc:
            raise exception.AgentUnreachable(host=host, method=method,
                                             attempts=retry + 1,
                                             reason=str(exc))
        except exception.AgentError as exc:
            raise _local(exc)
        except oslo_messaging.RemoteError as exc:
            raise exception.AgentError(
                reason=f"{method} on {host}: {exc.exc_type}: {exc.value}")
        except (oslo_messaging.MessagingException, OSError) as exc:
            raise exception.AgentUnreachable(host=host, method=method,
                                             attempts=retry + 1,
                                             reason=str(exc))
        except Exception as exc:
            raise exception.AgentError(
                reason=f"RPC {method} to {host} failed: "
                       f"{type(exc).__name__}: {exc}")

    def discover(self, host):
        """Devices of ``host`` with their in-band attach handles.

        :returns: ``{"host", "devices": [...]}`` (see AgentManager).
        """
        return self._call(host, "discover")

    def current_function(self, host, pci_address, region_id):
        """Read what a region runs: ``{"function_id", "state", ...}``."""
        return self._call(host, "current_function", pci_address=pci_address,
                          region_id=region_id)

    def program_region(self, host, pci_address, region_id,
                       bitstream_id=None, function_id=None, timeout=None):
        """Program a region and wait for the device's confirmation.

        Give ``bitstream_id`` (an image id) or ``function_id`` (exactly one
        image carries it). Waits at most ``timeout`` (default
        ``[agent] program_timeout``) and fails early when the agent stops
        sending heartbeats.

        :raises AgentTimeout, AgentUnreachable, ProgrammingFailed,
            ImageNotFound, ImageAmbiguous, ChecksumMismatch, RegionBusy:
        :returns: ``{"function_id", "image", "seconds", ...}``.
        """
        return self._call(host, "program_region",
                          timeout=timeout or self.conf.agent.program_timeout,
                          heartbeat=True, pci_address=pci_address,
                          region_id=region_id, bitstream_id=bitstream_id,
                          function_id=function_id)

    def find_image(self, host, bitstream_id=None, function_id=None,
                   timeout=None):
        """The image ``host``'s agent would program for this target
        (:meth:`~cyborg_lite.agent.manager.AgentManager.find_image`)."""
        return self._call(host, "find_image", timeout=timeout,
                          bitstream_id=bitstream_id, function_id=function_id)

    def reset_region(self, host, pci_address, region_id):
        """Clear a region (no function, ``error`` forgotten)."""
        return self._call(host, "reset_region", heartbeat=True,
                          pci_address=pci_address, region_id=region_id)

    def create_mdev(self, host, pci_address, mdev_type, mdev_uuid):
        """Create a mediated device with ``mdev_uuid`` (idempotent)."""
        return self._call(host, "create_mdev", pci_address=pci_address,
                          mdev_type=mdev_type, mdev_uuid=mdev_uuid)

    def remove_mdev(self, host, pci_address, mdev_uuid):
        """Remove a mediated device (idempotent)."""
        return self._call(host, "remove_mdev", pci_address=pci_address,
                          mdev_uuid=mdev_uuid)
