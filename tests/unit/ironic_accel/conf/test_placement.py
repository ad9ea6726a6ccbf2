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

from oslo_config import cfg

from accel_common import clients
from ironic_accel.conf import placement as placement_conf


def _conf(*args):
    conf = cfg.ConfigOpts()
    placement_conf.register_opts(conf)
    conf(list(args))
    return conf


def test_reporting_is_off_until_placement_is_configured():
    conf = _conf()
    assert conf.accel_placement.enabled
    assert not clients.is_configured(conf, "placement")
    conf.set_override("auth_type", "admin_token", "placement")
    assert clients.is_configured(conf, "placement")


def test_options_are_published_for_the_generator():
    groups = {str(group): opts for group, opts in placement_conf.list_opts()}
    assert {"placement", "accel_placement"} <= set(groups)
    names = {opt.name for opt in groups["accel_placement"]}
    assert names == {"enabled", "report_interval", "conflict_retries",
                     "full_report_every"}
