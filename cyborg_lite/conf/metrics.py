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

"""``[metrics]``: the Prometheus scrape endpoint, ``GET /metrics``
(doc/source/admin/metrics.rst)."""

import ipaddress

from oslo_config import cfg

metrics_opts = [
    cfg.BoolOpt(
        "enabled",
        default=True,
        help="Serve GET /metrics in the Prometheus text format: regions "
             "and accelerator requests by state, the Nova event backlog "
             "(read from the database at each scrape, so every API worker "
             "answers the same), and the bind and programming latencies, "
             "agent calls not answered and periodic pass failures of the "
             "API processes. Callers the cyborg:metrics:get policy allows "
             "(administrators by default) may scrape it; see "
             "allowed_source_ranges for a scraper without a token."),
    cfg.ListOpt(
        "allowed_source_ranges",
        default=[],
        item_type=cfg.types.String(),
        help="Networks (CIDR, e.g. 10.0.5.0/24 or 2001:db8::/64) whose "
             "clients may scrape GET /metrics without a token. Prometheus "
             "cannot renew a Keystone token, so a deployment lists its "
             "scrapers' network here, as [healthcheck] "
             "allowed_source_ranges does for load balancers. A request a "
             "proxy forwarded (it carries X-Forwarded-For or Forwarded) "
             "never counts as coming from these networks: the proxy's "
             "address says nothing of the client's. Empty: a token the "
             "policy allows is always needed."),
]


def register_opts(conf):
    """Register ``[metrics]`` on ``conf``."""
    conf.register_opts(metrics_opts, group="metrics")


def list_opts():
    """(group, options) pairs for oslo-config-generator."""
    return [("metrics", metrics_opts)]


def source_networks(conf):
    """``[metrics] allowed_source_ranges`` as networks.

    :raises ValueError: naming the option and the entry that is not a
        network, so the service refuses to start rather than scrape open.
    """
    networks = []
    for entry in conf.metrics.allowed_source_ranges:
        try:
            networks.append(ipaddress.ip_network(entry.strip(),
                                                 strict=False))
        except ValueError as error:
            raise ValueError(
                f"[metrics] allowed_source_ranges: {entry!r} is not a "
                f"network in CIDR form (e.g. 10.0.5.0/24): {error}"
            ) from None
    return networks
