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

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg

from accel_common import clients
from accel_tools.embedded import placement


def test_client_conf_text_is_what_ironic_reads_for_placement(tmp_path):
    # The section IronicServer writes, loaded as the plugin loads it.
    config = tmp_path / "ironic.conf"
    config.write_text(placement.client_conf_text("http://127.0.0.1:8778"))
    conf = cfg.ConfigOpts()
    clients.register_client_opts(conf, "placement")
    conf(["--config-file", str(config)])
    assert clients.is_configured(conf, "placement")
    auth = ks_loading.load_auth_from_conf_options(conf, "placement")
    assert auth.get_endpoint(None) == "http://127.0.0.1:8778"
    assert auth.get_token(None) == "admin"


def test_server_url_is_known_before_start_when_the_port_is_chosen(tmp_path):
    server = placement.PlacementServer(str(tmp_path), port=12345)
    assert server.url == "http://127.0.0.1:12345"
    assert placement.PlacementServer(str(tmp_path)).url is None
