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

"""The sushy client of a node's BMC: session cache, retries, errors.

Everything the plugin asks a BMC goes through :func:`call`: sushy clients
are cached per BMC address and credentials (session reuse), a request is
retried a bounded number of times on connection errors and HTTP 503
(tenacity, as Ironic's ``drivers/modules/redfish/utils.py`` retries), and
sushy errors become :class:`~ironic_accel.exception.AcceleratorBMCError`
or :class:`~ironic_accel.exception.BMCUnavailable` naming the node and the
device.
"""

import collections
import hashlib
import threading

from ironic.common import exception
from ironic.conf import CONF
from ironic.drivers.modules.redfish import utils as redfish_utils
from oslo_log import log as logging
import sushy
from sushy import connector as sushy_connector
import tenacity

from ironic_accel import conf as accel_conf
from ironic_accel import exception as accel_exception

LOG = logging.getLogger(__name__)

accel_conf.register_opts(CONF)

_MAX_CACHED_CLIENTS = 1000


class Client:
    """A cached sushy root with its connector.

    NOTE(ironic-accel): sushy retries GETs answered 5xx ten times three
    seconds apart by default and connection errors three times; stacked
    under a conductor periodic that hides a BMC outage for half a minute
    per request. ``server_side_retries=1`` with no delay is the least sushy
    takes (0 means its default): one connection attempt, and a GET answered
    5xx repeated once at once. :func:`call` owns the bounded retries.
    """

    def __init__(self, driver_info):
        auth_class = redfish_utils.SessionCache.AUTH_CLASSES[
            driver_info["auth_type"]]
        auth = auth_class(username=driver_info["username"],
                          password=driver_info["password"])
        self.connector = sushy_connector.Connector(
            driver_info["address"], verify=driver_info["verify_ca"],
            server_side_retries=1, server_side_retries_delay=0,
            default_request_timeout=CONF.redfish.read_timeout,
            connect_timeout=CONF.redfish.connect_timeout,
            tls_min_version=driver_info.get("tls_min_version"),
            tls_ciphers=driver_info.get("tls_ciphers"))
        kwargs = {"verify": driver_info["verify_ca"], "auth": auth,
                  "connector": self.connector}
        if driver_info.get("root_prefix"):
            kwargs["root_prefix"] = driver_info["root_prefix"]
        self.root = sushy.Sushy(driver_info["address"], **kwargs)
        self.address = driver_info["address"]
        self.verify = driver_info["verify_ca"]
        self._update_service = None

    def update_service(self):
        """The BMC's UpdateService, read once per client."""
        if self._update_service is None:
            self._update_service = self.root.get_update_service()
        return self._update_service


_clients = collections.OrderedDict()
_clients_lock = threading.Lock()


def _client_key(driver_info):
    password = (driver_info.get("password") or "").encode()
    # NOTE(ironic-accel): a fast digest is enough here: the key lives in this
    # process only and just has to change when the password does.
    return (driver_info["address"], driver_info.get("username"),
            str(driver_info.get("verify_ca")), driver_info.get("root_prefix"),
            driver_info["auth_type"], hashlib.sha256(password).hexdigest())


def _get_client(node):
    driver_info = redfish_utils.parse_driver_info(node)
    key = _client_key(driver_info)
    with _clients_lock:
        client = _clients.get(key)
        if client is not None:
            _clients.move_to_end(key)
            return client
    client = Client(driver_info)
    with _clients_lock:
        _clients[key] = client
        while len(_clients) > _MAX_CACHED_CLIENTS:
            _clients.popitem(last=False)
    return client


def _forget_client(node):
    try:
        key = _client_key(redfish_utils.parse_driver_info(node))
    except exception.IronicException:
        return
    with _clients_lock:
        _clients.pop(key, None)


def clear_cache():
    """Forget every cached sushy client (tests, credential rotation)."""
    with _clients_lock:
        _clients.clear()


def describe(exc):
    """A short text of a sushy error: the status and first message."""
    # NOTE(ironic-accel): sushy's messages carry the whole extended info of
    # the Redfish error; the status and first message are what helps.
    if isinstance(exc, sushy.exceptions.HTTPError):
        detail = getattr(exc, "detail", None) or "no detail"
        return f"HTTP {exc.status_code}: {detail}"[:300]
    return str(exc)[:300]


def is_transient(exc):
    """A connection error or HTTP 503: the BMC may answer later."""
    if isinstance(exc, sushy.exceptions.ServerSideError):
        return exc.status_code == 503
    return isinstance(exc, sushy.exceptions.ConnectionError)


def _retryable(idempotent):
    def check(exc):
        # NOTE(ironic-accel): a request the BMC may have acted on when its
        # answer got lost (a POST) is retried only on 503, which says the
        # BMC refused it.
        if isinstance(exc, sushy.exceptions.ConnectionError):
            return idempotent
        return is_transient(exc)
    return check


def call(node, device, what, func, idempotent=True):
    """Run ``func(client)`` with bounded retries and error translation.

    :param node: the Ironic node.
    :param device: the device the call is about (for messages), or None.
    :param what: a few words saying what was asked, for messages.
    :param func: called with a :class:`Client`.
    :param idempotent: False for a request the BMC may have acted on when
        its answer got lost (a POST): only 503 is retried then.
    :raises: BMCUnavailable when every attempt met a connection error or
        503; AcceleratorBMCError for any other BMC error.
    """
    attempts = CONF.ironic_accel.bmc_retries + 1
    device = device or "-"

    def attempt():
        try:
            return func(_get_client(node))
        except (sushy.exceptions.ConnectionError,
                sushy.exceptions.AccessError):
            # NOTE(ironic-accel): the session may be what broke.
            _forget_client(node)
            raise

    def log_retry(state):
        LOG.warning("BMC of node %(node)s: %(what)s failed (attempt "
                    "%(n)d of %(total)d), retrying: %(exc)s",
                    {"node": node.uuid, "what": what,
                     "n": state.attempt_number, "total": attempts,
                     "exc": describe(state.outcome.exception())})

    retrying = tenacity.Retrying(
        retry=tenacity.retry_if_exception(_retryable(idempotent)),
        stop=tenacity.stop_after_attempt(attempts),
        wait=tenacity.wait_fixed(CONF.ironic_accel.bmc_retry_interval),
        before_sleep=log_retry, reraise=True)
    try:
        return retrying(attempt)
    except sushy.exceptions.AccessError as exc:
        raise accel_exception.AcceleratorBMCError(
            node=node.uuid, device=device,
            reason=f"{what} refused, check the credentials: "
                   f"{describe(exc)}")
    except sushy.exceptions.SushyError as exc:
        if _retryable(idempotent)(exc):
            raise accel_exception.BMCUnavailable(
                node=node.uuid, device=device,
                reason=f"{what} failed after {attempts} attempts: "
                       f"{describe(exc)}")
        raise accel_exception.AcceleratorBMCError(
            node=node.uuid, device=device,
            reason=f"{what} failed: {describe(exc)}")


def system(client, node):
    """The node's sushy System on ``client`` (inside :func:`call`)."""
    # NOTE(ironic-accel): one cached client serves every system of a BMC;
    # the system comes from each node's own driver_info.
    system_id = redfish_utils.parse_driver_info(node)["system_id"]
    return client.root.get_system(system_id)


def get_system(node):
    """The node's sushy System, over the cached session.

    Resources reached from it later (managers, chassis) are read lazily over
    the same session, outside this function's retries.
    """
    return call(node, None, "GET System", lambda client: system(client,
                                                                 node))


def get_json(client, uri):
    """The JSON body of ``GET uri`` (inside :func:`call`)."""
    return client.connector.get(uri).json()


def optional(node, what, func, *args):
    """``func(*args)``, or None when the BMC answers a lasting error.

    For resources the inventory can do without (a chassis' PCIe device, a
    linked function): a BMC that answers 404 or 500 for one of them (seen
    on recorded iLO trees) costs that resource, with a warning, not the
    whole inventory. 503 and connection errors still go to :func:`call`'s
    retries.
    """
    try:
        return func(*args)
    except sushy.exceptions.HTTPError as exc:
        if is_transient(exc) or isinstance(exc,
                                           sushy.exceptions.AccessError):
            raise
        LOG.warning("BMC of node %(node)s: %(what)s failed, left out: "
                    "%(exc)s", {"node": node.uuid, "what": what,
                                "exc": describe(exc)})
        return None
