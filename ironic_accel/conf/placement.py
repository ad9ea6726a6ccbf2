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

"""Placement reporting options.

``[placement]`` holds keystoneauth session, auth and adapter options, as
Nova and Cyborg configure their Placement client; leaving both
``auth_type`` and ``endpoint_override`` unset turns reporting off.
``[accel_placement]`` holds the reporter's own options.

A production ``[placement]`` looks like Nova's::

    [placement]
    auth_type = password
    auth_url = https://keystone.example.org/v3
    username = ironic
    password = ...
    project_name = service
    user_domain_name = Default
    project_domain_name = Default
    region_name = RegionOne

and a test Placement with ``auth_strategy = noauth2`` is reached with
keystoneauth's ``admin_token`` plugin (no catalog)::

    [placement]
    auth_type = admin_token
    endpoint = http://127.0.0.1:PORT
    token = admin
"""

from oslo_config import cfg

from accel_common import clients

GROUP = "placement"

accel_placement_group = cfg.OptGroup(
    "accel_placement",
    title="Accelerator Placement reporter",
    help="How ironic_accel keeps Placement's accelerator providers in step "
         "with the nodes' inventory documents.")

ACCEL_PLACEMENT_OPTS = [
    cfg.BoolOpt("enabled", default=True,
                help="Report accelerator providers to Placement after each "
                     "inventory refresh and from the periodic. Reporting "
                     "also needs [placement] configured; turn this off to "
                     "keep [placement] for other uses without reporting."),
    cfg.IntOpt("report_interval", default=600, min=0,
               help="Seconds between periodic re-reports of every node's "
                    "inventory document, so Placement follows reality "
                    "after a missed report or a manual change (a missing "
                    "compute-node provider is retried then). 0 disables "
                    "the periodic."),
    cfg.IntOpt("full_report_every", default=6, min=1,
               help="The periodic skips, without a single Placement "
                    "request, a node whose inventory document has not "
                    "changed since this conductor last reported it, except "
                    "every this many passes, when it reports it in full: "
                    "drift made in Placement behind the reporter's back (a "
                    "provider deleted or edited) is repaired within this "
                    "many report_interval periods. 1 reports every node on "
                    "every pass."),
    cfg.IntOpt("conflict_retries", default=4, min=0,
               help="How often one provider's write is re-read and retried "
                    "after Placement answers 409 concurrent_update "
                    "(someone else changed the provider in between)."),
]


def register_opts(conf):
    """Register ``[placement]`` and ``[accel_placement]`` on ``conf``."""
    clients.register_client_opts(conf, GROUP)
    conf.register_group(accel_placement_group)
    conf.register_opts(ACCEL_PLACEMENT_OPTS, group=accel_placement_group)


def list_opts():
    """(group, options) pairs for oslo-config-generator."""
    return [(GROUP, clients.list_client_opts(GROUP)),
            (accel_placement_group, ACCEL_PLACEMENT_OPTS)]
