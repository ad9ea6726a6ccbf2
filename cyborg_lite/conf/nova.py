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

"""``[nova]``: how cyborg_lite reaches Nova, sends it events and
reclaims the ARQs of servers Nova no longer has.

The keystoneauth session, auth and adapter options (as Nova and Cyborg
configure their clients), and how the ``accelerator-request-bound`` events
are retried. Neither ``auth_type`` nor ``endpoint_override`` set means there
is no Nova to notify (standalone).
"""

from oslo_config import cfg

from accel_common import clients

GROUP = "nova"

nova_notify_opts = [
    cfg.IntOpt("notify_retries", default=5, min=0,
               help="How many times a failed os-server-external-events "
                    "call is retried. A 207 whose codes are all 422 (the "
                    "instance has no host yet) is not retried."),
    cfg.FloatOpt("notify_retry_interval", default=0.5, min=0,
                 help="Seconds before the first retry; doubled after each "
                      "attempt."),
    cfg.IntOpt("notify_workers", default=4, min=1,
               help="Threads per API process that send Nova events after "
                    "the PATCH reply, so a slow Nova never delays a bind."),
    cfg.FloatOpt("notify_batch_interval", default=0.05, min=0, max=5,
                 help="Seconds a queued event waits for others before they "
                      "leave together in one os-server-external-events "
                      "call (at most 50 events), as Neutron's "
                      "send_events_interval batches its events. A batch "
                      "costs one claim, one call and one database write "
                      "however many events it carries; Nova waits minutes "
                      "for these events, so a few milliseconds are free. "
                      "0 sends each bind's events at once."),
    cfg.BoolOpt("notify_instant_binds", default=False,
                help="Also send the event of an ARQ bound within the PATCH "
                     "(its region needed no programming). Nova binds in "
                     "the conductor and reads the ARQs it finds resolved "
                     "before it waits for any event, so it never waits "
                     "for these: each one costs an os-server-external-"
                     "events call that Nova answers 207 (422, the "
                     "instance has no host yet) or that nova-compute logs "
                     "as 'Received unexpected event'. ARQs bound after "
                     "the PATCH (programmed first) always get their "
                     "event. Enable only for a client that waits for the "
                     "event of every bind."),
]

nova_reclaim_opts = [
    cfg.IntOpt("reclaim_interval", default=300, min=0,
               help="Seconds between two passes that ask Nova about the "
                    "instances of bound (resolved) ARQs and delete the ARQs "
                    "of every instance Nova answers 404 for, freeing their "
                    "attach handles. Nova does not always delete a "
                    "server's ARQs: for a SmartNIC port it finds the ARQ in "
                    "the port's binding:profile, read with the server "
                    "owner's token, which Neutron's default policy strips "
                    "(admin and service only), so the VF would stay in use "
                    "for ever. An error or a timeout never reclaims, nor "
                    "does a pass whose [nova] user cannot list every "
                    "project's servers (the admin role): Nova answers 404 "
                    "for another project's server too. Each ARQ reclaimed "
                    "is logged. 0 disables the pass; so does an "
                    "unconfigured [nova] (standalone)."),
    cfg.IntOpt("reclaim_batch", default=50, min=1,
               help="Most instances one reclaim pass asks Nova about (one "
                    "GET /servers/{id} each); the next pass goes on where "
                    "it stopped, so the cost of a pass stays bounded "
                    "however many servers are running; also the most "
                    "ARQs one statement of initial_arq_max_age's "
                    "cleanup deletes."),
    cfg.IntOpt("initial_arq_max_age", default=3600, min=0,
               help="Seconds after which the reclaim pass deletes an ARQ "
                    "created with a service token (Nova's) that is still "
                    "Initial with no instance. When the answer to Nova's "
                    "create is lost after the database committed it (a "
                    "connection dropped as the answer came back), Nova "
                    "gets a 503 and creates the boot's ARQs again: the "
                    "first ones it never learns of and never deletes. "
                    "Keep it well above the time Nova takes from creating "
                    "a boot's ARQs to binding them (seconds; minutes under "
                    "a scheduling storm). ARQs a user created without a "
                    "service token are never deleted this way. Each batch "
                    "deleted is logged in one line. 0 keeps them. Runs "
                    "every reclaim_interval, with [nova] configured."),
]


def register_opts(conf):
    """Register ``[nova]`` on ``conf``."""
    clients.register_client_opts(conf, GROUP)
    conf.register_opts(nova_notify_opts + nova_reclaim_opts, group=GROUP)


def list_opts():
    """(group, options) pairs for oslo-config-generator."""
    return [(GROUP, clients.list_client_opts(GROUP) + nova_notify_opts
             + nova_reclaim_opts)]
