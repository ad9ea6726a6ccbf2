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

"""``[agent]`` and ``[pci]``: the host agent, its drivers and the RPC
between API and agent.

``[DEFAULT] transport_url`` and ``control_exchange`` are oslo.messaging's own
options (published by oslo-config-generator's ``oslo.messaging`` namespace);
:func:`register_opts` registers them through oslo.messaging and keeps
oslo.messaging's default (a broker). The in-process transport (``fake://``,
API and agent in one process, no broker) and the ``sim`` driver are for a
standalone host, the demo and the tests, which set them explicitly.
"""

import importlib
import socket

from oslo_config import cfg
from oslo_messaging import opts as messaging_opts

GROUP = "agent"
PCI_GROUP = "pci"

#: The in-process oslo.messaging transport: API and agent in one process.
EMBEDDED_TRANSPORT_URL = "fake://"

agent_opts = [
    cfg.HostDomainOpt(
        "host",
        default=socket.getfqdn(),
        sample_default="<fqdn>",
        help="Name of this host's agent on the message bus (the RPC server "
             "name). It must equal the hostname Nova puts in binds, i.e. the "
             "hypervisor host name / compute-node resource provider name, "
             "so the API finds the agent of the host an instance lands on."),
    cfg.ListOpt(
        "enabled_drivers",
        default=[],
        help="Accelerator drivers this agent loads (entry points of the "
             "cyborg_lite.drivers group): intel_opae, xilinx_xrt, "
             "nvidia_mdev, pci, or sim (simulated devices, for the demo and "
             "tests). Each device is served by the first driver that "
             "discovers it. None by default: the drivers are those of the "
             "host's hardware, named by the deployer."),
    cfg.IntOpt(
        "rpc_timeout",
        default=30, min=1,
        help="Seconds the API waits for the agent's answer to a short call "
             "(discover, current_function, reset, mdev create/remove)."),
    cfg.IntOpt(
        "program_timeout",
        default=1800, min=1,
        help="Seconds the API waits at most for a region to be programmed "
             "(download, checksum check and the vendor tool together)."),
    cfg.IntOpt(
        "rpc_heartbeat_timeout",
        default=10, min=2,
        help="While a call runs, the agent sends a heartbeat every half of "
             "this many seconds; the caller gives up when none arrives in "
             "this time. This is how an agent that died in the middle of "
             "programming is noticed long before program_timeout."),
    cfg.IntOpt(
        "rpc_retry",
        default=2, min=0,
        help="How many more times a call tries to reach the message broker "
             "before it fails. Bounded on purpose: an unreachable broker "
             "must fail the bind quickly, not hang it."),
    cfg.StrOpt(
        "sim_state_dir",
        default="/var/lib/cyborg_lite/sim",
        help="sim driver: directory holding one JSON file per simulated "
             "device (written atomically)."),
    cfg.StrOpt(
        "sim_inventory_file",
        help="sim driver: inventory document (shared schema) describing the "
             "simulated devices, used when sim_state_dir is empty. Default: "
             "the shipped etc/cyborg_lite/inventory.example.json."),
    cfg.FloatOpt(
        "sim_program_seconds",
        default=2.0, min=0,
        help="sim driver: how long programming a region takes."),
    cfg.BoolOpt(
        "sim_fail_program",
        default=False,
        help="sim driver: make every programming fail (failure injection). "
             "A file named FAIL_PROGRAM in sim_state_dir does the same at "
             "run time; its content becomes the error message."),
    cfg.StrOpt(
        "image_catalog_dir",
        default="/var/lib/cyborg_lite/images",
        help="Standalone image catalog (used when [glance] is not "
             "configured): a directory with index.json listing images "
             "(id, function_id, file, sha256) and the image files."),
    cfg.StrOpt(
        "image_cache_dir",
        help="Where the agent downloads Glance images before programming. "
             "Default: a temporary directory per download."),
    cfg.StrOpt(
        "sysfs_root",
        default="/",
        help="Root under which the real-device drivers read sys/ (a fake "
             "tree in tests)."),
    cfg.StrOpt(
        "fpgaconf_path",
        default="fpgaconf",
        help="intel_opae driver: the OPAE fpgaconf tool."),
    cfg.ListOpt(
        "enabled_vgpu_types",
        default=[],
        help="nvidia_mdev driver: the vGPU types (e.g. nvidia-241) offered "
             "on a GPU that runs one type at a time (pre-Ampere, time-"
             "sliced), first present wins, as Nova's [devices] "
             "enabled_mdev_types. Empty: the type already in use on the "
             "GPU, else the one with the most instances. Offering every "
             "type at once would count a GPU's capacity several times."),
    cfg.StrOpt(
        "xbmgmt_path",
        default="xbmgmt",
        help="xilinx_xrt driver: the XRT xbmgmt tool."),
    cfg.IntOpt(
        "tool_timeout",
        default=900, min=1,
        help="Seconds a vendor tool may run before it is considered hung."),
]

pci_opts = [
    cfg.MultiStrOpt(
        "device_spec",
        default=[],
        help="pci driver: the PCI functions this host hands over whole, "
             "in the syntax of Nova's [pci] device_spec: each value a JSON "
             "object (or a list of them) with vendor_id, product_id, "
             "address (glob or regular expressions) or devname, and the "
             "tags physical_network, resource_class, traits; device_type "
             "(GPU, NIC, QAT, ...) overrides the type the PCI class gives. "
             "A spec naming one PF's address also matches its VFs. Repeat "
             "the option for several specs. Example: {\"vendor_id\": "
             "\"15b3\", \"product_id\": \"1018\", \"physical_network\": "
             "\"physnet1\"}. A spec that is malformed or matches nothing, "
             "and a matching function the host uses, are logged and give no "
             "handle."),
    cfg.ListOpt(
        "physical_device_mappings",
        default=[],
        help="pci driver: <physical_network>:<PF netdev> items, as the "
             "Neutron SR-IOV agent's [sriov_nic] physical_device_mappings: "
             "the physical network of the VFs of that PF when their device "
             "spec names none. Nova needs one on every NIC VF to bind a "
             "port, so a NIC VF with neither is not offered."),
]


def register_opts(conf):
    """Register ``[agent]``, ``[pci]`` and oslo.messaging's ``[DEFAULT]``
    options."""
    conf.register_opts(agent_opts, group=GROUP)
    conf.register_opts(pci_opts, group=PCI_GROUP)
    for group, opts in messaging_opts.list_opts():
        if group is None:
            conf.register_opts(opts)
    # NOTE(agent): oslo.messaging 18 reads [oslo_messaging_tracing] and
    # [oslo_messaging_metrics] on every call but registers them only on the
    # global cfg.CONF; register them here so a ConfigOpts of our own (one
    # per test, per app) works too.
    for module, name in (("oslo_messaging._tracing.client",
                          "oslo_messaging_tracing"),
                         ("oslo_messaging._metrics.client",
                          "oslo_messaging_metrics")):
        try:
            opts = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            continue
        conf.register_opts(opts, group=name)
    conf.set_default("control_exchange", "cyborg_lite")


def list_opts():
    """(group, options) pairs for oslo-config-generator."""
    return [(GROUP, agent_opts), (PCI_GROUP, pci_opts)]
