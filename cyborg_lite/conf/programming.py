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

"""``[programming]``: bind-time programming and its reconciler
(:mod:`cyborg_lite.programming`)."""

from oslo_config import cfg

programming_opts = [
    cfg.BoolOpt(
        "enabled",
        default=True,
        help="Program regions at bind time when a device profile asks for "
             "a function (accel:function_id) or bitstream "
             "(accel:bitstream_id) the region does not run. When false, "
             "such binds are refused with 409."),
    cfg.IntOpt(
        "workers",
        default=4, min=1,
        help="Threads per API process that wait for agents to program "
             "regions (the PATCH never waits for programming)."),
    cfg.FloatOpt(
        "heartbeat_interval",
        default=2.0, min=0.1,
        help="Seconds between the lease renewals an API process writes for "
             "the programming runs it waits for."),
    cfg.FloatOpt(
        "stale_after",
        default=30.0, min=0.1,
        help="A region left in 'programming' whose lease was not renewed "
             "for this many seconds belongs to a dead API process: the "
             "reconciler takes it over and settles it from the agent's "
             "reading. Must be well above heartbeat_interval."),
    cfg.IntOpt(
        "relaunch_limit",
        default=3, min=0,
        help="How many times the reconciler starts a stale programming run "
             "again when the agent does not run its target and is not "
             "programming (its API process died, or its answer was lost, "
             "before the agent was asked: loading the target again is "
             "safe). Past this many starts, or with 0, such a run fails: "
             "the region goes to error and its ARQs to BindFailed. A run "
             "the agent failed (it reads error) always fails."),
    cfg.FloatOpt(
        "reconcile_interval",
        default=60.0, min=0,
        help="Seconds between reconciler runs in each API process (settle "
             "stuck programming runs and ARQs, check regions in error, fill "
             "function pools). 0 runs it only once, at start."),
    cfg.IntOpt(
        "image_check_timeout",
        default=10, min=1,
        help="Seconds a bind that needs programming waits for the host "
             "agent to say which image it would load. Nova 34 does not "
             "reschedule a failed bind and handles a failure reliably only "
             "when it is the answer to its bind PATCH, so a missing image "
             "(or an agent that does not answer in time) refuses the bind "
             "with 409 before anything is sent to the device."),
    cfg.FloatOpt(
        "agent_waiting_limit",
        default=3.0, min=0.1,
        help="Once a call to a host's agent has waited this many seconds "
             "without an answer, further binds needing that agent are "
             "refused with 409 at once instead of waiting too (each would "
             "hold an API worker for up to image_check_timeout). A live "
             "agent says which image it would load in well under a "
             "second; raise this if its image source is slower."),
    cfg.FloatOpt(
        "agent_probe_interval",
        default=5.0, min=0.5,
        help="Seconds between the background probes of an agent that "
             "stopped answering (one probe per interval across all API "
             "processes). Until a probe gets an answer, binds needing that "
             "agent are refused with 409 at once; after it, they are sent "
             "to it again."),
    cfg.BoolOpt(
        "reconcile_on_start",
        default=True,
        help="Run the reconciler when an API process starts."),
    cfg.BoolOpt(
        "embedded_agent",
        default=False,
        help="With the in-process transport (transport_url = fake://), "
             "start the host agent inside the API process, with the drivers "
             "of [agent] enabled_drivers, so a single host works with no "
             "message broker. Off by default: a deployment runs "
             "cyborg-lite-agent on each compute host behind a broker."),
]


def register_opts(conf):
    """Register ``[programming]`` on ``conf``."""
    conf.register_opts(programming_opts, group="programming")


def list_opts():
    """(group, options) pairs for oslo-config-generator."""
    return [("programming", programming_opts)]
