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

"""``[pools]``: function pools, kept programmed ahead of binds
(:mod:`cyborg_lite.programming.pools`)."""

from oslo_config import cfg

pools_opts = [
    cfg.ListOpt(
        "policies",
        default=[],
        sample_default="nlb0:2,gzip:1:FPGA",
        help="Function pools: keep at least N idle regions programmed with "
             "function F, so the scheduler finds them by the function trait "
             "and binds need no programming. Each entry is "
             "FUNCTION:N[:RESOURCE_CLASS]. Pools created with "
             "'cyborg-lite-manage pools set' are added to these."),
    cfg.BoolOpt(
        "fill",
        default=True,
        help="Let the reconciler program idle regions for the pools. When "
             "false, 'cyborg-lite-manage pools status' still reports them."),
]


def register_opts(conf):
    """Register ``[pools]`` on ``conf``."""
    conf.register_opts(pools_opts, group="pools")


def list_opts():
    """(group, options) pairs for oslo-config-generator."""
    return [("pools", pools_opts)]
