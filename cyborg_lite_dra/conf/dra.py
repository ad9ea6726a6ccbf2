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

"""``[dra]``: the plugin's place in the node and in the cluster."""

import socket

from oslo_config import cfg

GROUP = "dra"

DEFAULT_DRIVER_NAME = "accel.cyborg-lite.openstack.org"

opts = [
    cfg.StrOpt("driver_name", default=DEFAULT_DRIVER_NAME,
               help="The DRA driver name: the driver of the ResourceSlices "
                    "this plugin publishes, of the DeviceClasses' "
                    "selectors and of the claims' allocation results it "
                    "prepares; also the vendor of its CDI devices. A DNS "
                    "subdomain."),
    cfg.StrOpt("node_name", default=socket.gethostname(),
               sample_default="<host name>",
               help="The Kubernetes node this plugin serves. It is also "
                    "the cyborg_lite host whose devices it publishes "
                    "(GET /v2/devices?hostname=) and the hostname of its "
                    "binds."),
    cfg.StrOpt("registry_dir", default="/var/lib/kubelet/plugins_registry",
               help="The kubelet's plugin registration directory, where "
                    "the registration socket <driver_name>-reg.sock is "
                    "created."),
    cfg.StrOpt("plugin_dir", default="",
               sample_default="/var/lib/kubelet/plugins/<driver_name>",
               help="The plugin's own directory: the DRA socket dra.sock "
                    "and the checkpoint of prepared claims. Empty: "
                    "/var/lib/kubelet/plugins/<driver_name>."),
    cfg.StrOpt("cdi_dir", default="/var/run/cdi",
               help="Where the CDI spec of each prepared claim is written; "
                    "the container runtime reads CDI specs from here."),
    cfg.StrOpt("kubeconfig", default="",
               help="A kubeconfig file for the Kubernetes API server. "
                    "Empty: the in-cluster service account of the pod."),
    cfg.StrOpt("device_profile", default="",
               help="The cyborg_lite device profile used for an allocated "
                    "device when neither the DeviceClass nor the claim "
                    "gives one in its opaque configuration "
                    "({\"deviceProfile\": \"<name>\"}). Empty: such a "
                    "claim fails with a message saying so."),
    cfg.FloatOpt("prepare_wait", default=30.0, min=1, max=40,
                 help="Seconds a NodePrepareResources call waits for its "
                      "claims' binds (programming may take minutes). A "
                      "claim not ready by then is answered with an error "
                      "saying it is in progress, the kubelet calls again, "
                      "and the bind already under way is not repeated. "
                      "Below the kubelet's 45 s timeout."),
    cfg.FloatOpt("unprepare_wait", default=30.0, min=1, max=40,
                 help="Seconds a NodeUnprepareResources call may spend; a "
                      "claim not unprepared by then gets an error and the "
                      "kubelet calls again."),
    cfg.FloatOpt("poll_interval", default=0.5, min=0.05,
                 help="Seconds between reads of a claim's accelerator "
                      "requests while cyborg_lite binds them."),
    cfg.IntOpt("publish_interval", default=60, min=0,
               help="Seconds between reads of the node's cyborg_lite "
                    "inventory to keep its ResourceSlices current. 0: "
                    "publish once at start only."),
    cfg.BoolOpt("device_taints", default=False,
                help="Publish a device taint on each unhealthy device: "
                     "<driver_name>/maintaining (NoSchedule) while an "
                     "operator has disabled its cyborg_lite device, "
                     "<driver_name>/gone (NoExecute, its pods are evicted) "
                     "once Placement marks the device vanished. Needs the "
                     "DRADeviceTaints feature gate (alpha, off by default "
                     "in Kubernetes 1.33 and 1.34); an API server that drops "
                     "the field is noticed, logged, and the plugin publishes "
                     "without taints until it restarts. Whatever this says, "
                     "every device "
                     "carries a health attribute (ok, maintaining, gone) "
                     "DeviceClass selectors can require."),
    cfg.BoolOpt("partitionable_devices", default=False,
                help="Publish a deployable with several attach handles (a "
                     "region's VFs, a card's vGPUs) so that as many claims "
                     "as it has handles can share it: a shared counter set "
                     "of its handles, the deployable whole (consuming them "
                     "all) and one device per handle, <name>-h<index> "
                     "(consuming one). Needs the DRAPartitionableDevices "
                     "feature gate (alpha, off by default in Kubernetes "
                     "1.33 and 1.34); an API server that drops the counters "
                     "is noticed, logged, and the plugin falls back to one "
                     "device per deployable until it restarts."),
    cfg.IntOpt("healthcheck_port", default=51515, min=-1, max=65535,
               help="TCP port of the plugin's grpc.health.v1.Health service "
                    "(services \"\" and \"liveness\"), for the kubelet's "
                    "gRPC liveness probe: it answers SERVING when the "
                    "registration and DRA sockets answer. -1: not served; "
                    "0: a free port (logged)."),
    cfg.StrOpt("healthcheck_address", default="0.0.0.0",
               help="Address the health service listens on; the kubelet "
                    "probes the pod's IP."),
    cfg.StrOpt("sysfs_root", default="/sys",
               help="Where sysfs is mounted (the attach handles' IOMMU "
                    "groups are read from it); in a container, the "
                    "host's /sys mounted read-only."),
    cfg.StrOpt("simulated_device_node", default="",
               help="For cyborg_lite's sim driver, whose attach handles "
                    "are not real PCI functions: the existing host "
                    "character device given to the container for a "
                    "handle not present in sysfs (e.g. /dev/null). Empty "
                    "(the default): only real VFIO devices are given, and "
                    "a handle without one fails its claim."),
]


def register_opts(conf):
    """Register ``[dra]`` on ``conf``."""
    conf.register_opts(opts, group=GROUP)


def plugin_dir(conf):
    """The plugin directory: ``[dra] plugin_dir`` or its default."""
    return (conf.dra.plugin_dir
            or f"/var/lib/kubelet/plugins/{conf.dra.driver_name}")


def list_opts():
    """(group, options) pairs for oslo-config-generator."""
    return [(GROUP, opts)]
