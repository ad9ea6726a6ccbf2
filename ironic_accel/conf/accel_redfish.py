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

"""Options of the accel-redfish hardware type.

``[accel-redfish]`` exists because Ironic's ``get_verify_ca()`` looks up a
group named after the node's hardware type; ``[ironic_accel]`` holds the
plugin's own timing and mapping options.
"""

from oslo_config import cfg

accel_redfish_group = cfg.OptGroup(
    "accel-redfish",
    title="accel-redfish hardware type",
    help="Options Ironic reads by hardware type name for accel-redfish "
         "nodes.")

ironic_accel_group = cfg.OptGroup(
    "ironic_accel",
    title="ironic-accel plugin",
    help="Accelerator firmware steps and inventory refresh.")

ACCEL_REDFISH_OPTS = [
    cfg.StrOpt("verify_ca",
               help="Ironic's get_verify_ca() reads this for nodes of the "
                    "accel-redfish hardware type when driver_info leaves "
                    "redfish_verify_ca unset: a CA bundle path, or unset "
                    "to use [conductor]verify_ca."),
]

IRONIC_ACCEL_OPTS = [
    cfg.FloatOpt("task_poll_interval", default=2.0, min=0.1,
                 help="Seconds between polls of a running accelerator "
                      "firmware task by the plugin's own conductor "
                      "periodic. Ironic's firmware periodic runs every 60 "
                      "seconds, far too coarse for a task of a few "
                      "seconds."),
    cfg.IntOpt("task_timeout", default=1800, min=1,
               help="Seconds an accelerator update task may run on the BMC "
                    "before the step fails."),
    cfg.IntOpt("bmc_retries", default=3, min=0,
               help="Retries of one BMC request on a connection error or "
                      "an HTTP 503 before the request fails."),
    cfg.FloatOpt("bmc_retry_interval", default=1.0, min=0,
                 help="Seconds between those retries."),
    cfg.IntOpt("bmc_unavailable_timeout", default=30, min=0,
               help="Seconds a running task may stay unreachable (the BMC "
                    "answers 503 or refuses connections) before the step "
                    "fails; polls continue meanwhile."),
    cfg.IntOpt("image_download_timeout", default=60, min=1,
               help="Seconds to download an image for its checksum check."),
    cfg.IntOpt("max_image_size", default=4 * 1024 ** 3, min=1,
               help="Largest image in bytes the checksum check downloads."),
    cfg.StrOpt("update_method", default="auto",
               choices=["auto", "SimpleUpdate", "MultipartHttpPushUri",
                        "HttpPushUri"],
               help="How accelerator images reach the BMC: 'auto' picks, "
                    "from what the UpdateService advertises, "
                    "MultipartHttpPushUri, else SimpleUpdate with Targets, "
                    "else HttpPushUri with HttpPushUriTargets; a method "
                    "forces that one (a step's update_method argument "
                    "overrides this). Whatever the method, the BMC gets "
                    "only the conductor's checked copy of the image: sent "
                    "by the conductor (push methods) or staged as "
                    "[redfish] firmware_source says (SimpleUpdate)."),
    cfg.StrOpt("compute_host_source", default="name",
               regex=(r"^(name|(extra|instance_info):[^:{}]+"
                      r"|([^{}]*\{(name|uuid)\})+[^{}]*)$"),
               help="Where the inventory document's host (the compute "
                    "host name Nova and Placement know the node by, i.e. "
                    "nova-compute's hypervisor hostname) comes from: "
                    "'name' (the node name), 'extra:<key>' or "
                    "'instance_info:<key>' (a node field), or a template "
                    "using {name} and/or {uuid}, e.g. '{name}.example.org' "
                    "when Nova uses FQDNs. Falls back to the node uuid "
                    "when the source is empty."),
]


def register_opts(conf):
    """Register both groups on ``conf``."""
    conf.register_group(accel_redfish_group)
    conf.register_opts(ACCEL_REDFISH_OPTS, group=accel_redfish_group)
    conf.register_group(ironic_accel_group)
    conf.register_opts(IRONIC_ACCEL_OPTS, group=ironic_accel_group)


def list_opts():
    """(group, options) pairs for oslo-config-generator."""
    return [(accel_redfish_group, ACCEL_REDFISH_OPTS),
            (ironic_accel_group, IRONIC_ACCEL_OPTS)]
