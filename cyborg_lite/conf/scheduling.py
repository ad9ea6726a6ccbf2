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

"""``[scheduling]``: what Nova's scheduler is told a boot may use
(doc/source/architecture.rst, "Scheduling a region that can serve the
group")."""

from oslo_config import cfg

scheduling_opts = [
    cfg.BoolOpt(
        "route_lookups",
        default=True,
        help="Route each device profile lookup Nova makes before it "
             "schedules a boot (GET /v2/device_profiles?name=NAME) to the "
             "regions that will serve it: regions running (or kept for) "
             "the function with handles free beyond the boots already "
             "routed there, or else an idle region kept for it from then "
             "on, and answer the group with that content's lock trait "
             "required. Concurrent boots of different functions then never "
             "share an idle region. Needs Placement; when false, groups "
             "only forbid the lock traits of other contents, and boots "
             "scheduled at the same moment may meet on one region (the "
             "bind then moves them within the host, or refuses with 409)."),
    cfg.IntOpt(
        "lookup_lease",
        default=180, min=10,
        help="Seconds a routed lookup counts against its content's free "
             "handles while its boot is not bound, and an idle region "
             "stays kept for a content after the last lookup routed to "
             "it. A boot whose scheduling takes longer may find its "
             "region given to another content."),
]


def register_opts(conf):
    """Register ``[scheduling]`` on ``conf``."""
    conf.register_opts(scheduling_opts, group="scheduling")


def list_opts():
    """(group, options) pairs for oslo-config-generator."""
    return [("scheduling", scheduling_opts)]
