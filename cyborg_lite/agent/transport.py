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

"""oslo.messaging transports for API <-> agent RPC.

``[DEFAULT] transport_url`` picks the broker. The in-process transport
(``fake://``, the embedded default) only connects a client and a server that
share one transport object, so those are cached per URL and process.
"""

import threading

import oslo_messaging

TOPIC = "cyborg-lite-agent"

#: A topic no server consumes, used to test that the broker is reachable.
PROBE_TOPIC = "cyborg-lite-agent-probe"

#: Exceptions the caller may rebuild from an agent's error reply.
ALLOWED_REMOTE_EXMODS = ["cyborg_lite.agent.exception"]

_SHARED = {}
_SHARED_LOCK = threading.Lock()


def is_in_process(conf):
    """True when the transport is oslo.messaging's in-process one."""
    return (conf.transport_url or "").startswith("fake:")


def get_transport(conf):
    """The RPC transport for ``conf`` (shared when in-process)."""
    if not is_in_process(conf):
        return oslo_messaging.get_rpc_transport(
            conf, allowed_remote_exmods=ALLOWED_REMOTE_EXMODS)
    with _SHARED_LOCK:
        key = conf.transport_url
        if key not in _SHARED:
            _SHARED[key] = oslo_messaging.get_rpc_transport(
                conf, allowed_remote_exmods=ALLOWED_REMOTE_EXMODS)
        return _SHARED[key]
