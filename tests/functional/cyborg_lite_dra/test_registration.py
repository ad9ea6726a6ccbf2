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

"""The kubelet's plugin watcher meets the plugin: registration socket,
GetInfo, NotifyRegistrationStatus, and the sockets gone after SIGTERM."""

from tests.functional.cyborg_lite_dra import env


def test_get_info_names_the_dra_socket_and_both_versions(plugin):
    info = plugin.info()
    assert info.type == "DRAPlugin"
    assert info.name == env.DRIVER
    assert info.endpoint == str(plugin.dra_socket)
    assert list(info.supported_versions) == ["v1.DRAPlugin",
                                             "v1beta1.DRAPlugin"]
    assert plugin.dra_socket.is_socket()


def test_registration_status_is_acknowledged_and_logged(plugin):
    plugin.notify(True)
    plugin.notify(False, "kubelet says no")
    assert plugin.info().name == env.DRIVER
    assert "kubelet says no" in plugin.log()


def test_sigterm_stops_the_plugin_and_removes_its_sockets(plugin):
    assert plugin.stop() == 0
    assert not plugin.registration_socket.exists()
    assert not plugin.dra_socket.exists()
