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

"""``cyborg-lite-dra-plugin --config-file F``: the DRA kubelet plugin of one
node, in the foreground until SIGTERM or SIGINT.

It serves the registration and DRA sockets (:mod:`cyborg_lite_dra.service`)
and keeps the node's ResourceSlices current (:mod:`cyborg_lite_dra.slices`)
every ``[dra] publish_interval`` seconds. With ``[placement]`` set, claims
are allocated in Placement and what VMs hold there is not offered
(:mod:`cyborg_lite_dra.ledger`).
"""

import logging
import signal
import sys
import threading

from oslo_log import log as oslo_log

from accel_common import clients
from cyborg_lite_dra import checkpoint
from cyborg_lite_dra import claims
from cyborg_lite_dra import conf as dra_conf
from cyborg_lite_dra import cyborg
from cyborg_lite_dra import functions
from cyborg_lite_dra import inventory
from cyborg_lite_dra import kube
from cyborg_lite_dra import ledger
from cyborg_lite_dra import service
from cyborg_lite_dra import slices
from cyborg_lite_dra.conf import dra

LOG = logging.getLogger(__name__)


def publish(conf, node_inventory, kube_api, state=None):
    """Read the node's devices and publish them; errors are logged (the
    next round tries again). Returns True when the slices are current.

    :param state: a dict kept across rounds: the features the API server
        dropped the fields of (``dropped``), published without them from
        then on.
    """
    state = {} if state is None else state
    dropped = state.setdefault("dropped", set())
    try:
        devices = node_inventory.refresh()
        for _ in range(3):
            try:
                slices.sync(
                    kube_api, conf.dra.driver_name, conf.dra.node_name,
                    devices,
                    taints=conf.dra.device_taints and "taints" not in dropped,
                    partitionable=(conf.dra.partitionable_devices
                                   and "partitions" not in dropped))
                return True
            except slices.FieldsDropped as error:
                LOG.error("%s: publishing without them until the plugin "
                          "restarts", error)
                dropped.add(error.feature)
        return False
    except (cyborg.CyborgError, kube.KubeError) as error:
        LOG.warning("Publishing the ResourceSlices of %s failed: %s",
                    conf.dra.node_name, error)
        return False


def _publisher(conf, node_inventory, kube_api, stop):
    state = {}
    while not stop.is_set():
        try:
            publish(conf, node_inventory, kube_api, state)
        except Exception:
            # NOTE(dra): the slices must keep being published whatever
            # one round met.
            LOG.exception("Publishing the ResourceSlices failed")
        if not conf.dra.publish_interval:
            return
        stop.wait(conf.dra.publish_interval)


def run(conf, stop):
    """Serve until ``stop`` is set; returns the exit code."""
    plugin_dir = dra.plugin_dir(conf)
    try:
        records = checkpoint.Checkpoint(plugin_dir)
    except checkpoint.CheckpointError as error:
        LOG.error("%s", error)
        return 1
    client = cyborg.Client(conf)
    kube_api = kube.Kube(conf.dra.kubeconfig)
    traits = accounts = None
    if clients.is_configured(conf, "placement"):
        traits = functions.FunctionTraits(conf)
        accounts = ledger.Ledger(conf, known=records.allocated)
    node_inventory = inventory.NodeInventory(
        client, conf.dra.node_name, traits,
        free=accounts.free if accounts else None)
    preparer = claims.Preparer(conf, client, kube_api, records,
                               node_inventory, ledger=accounts)
    try:
        sockets = service.Sockets(conf, plugin_dir, preparer)
    except OSError as error:
        LOG.error("%s", error)
        return 1
    publisher = threading.Thread(
        target=_publisher, args=(conf, node_inventory, kube_api, stop),
        name="publisher", daemon=True)
    publisher.start()
    try:
        stop.wait()
    finally:
        LOG.info("Stopping")
        sockets.stop()
        preparer.stop()
        publisher.join(10)
    return 0


def main(argv=None):
    """The console script."""
    conf = dra_conf.new_conf()
    oslo_log.register_options(conf)
    conf(sys.argv[1:] if argv is None else argv,
         project="cyborg_lite_dra", prog="cyborg-lite-dra-plugin")
    oslo_log.setup(conf, "cyborg-lite-dra-plugin")
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    return run(conf, stop)


if __name__ == "__main__":
    sys.exit(main())
