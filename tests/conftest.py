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

"""The fixtures every test may name: each module's docstring says what it
starts. A fixture runs only for the tests that ask for it, so loading them
all here starts nothing."""

pytest_plugins = [
    "tests.fixtures.bmc",
    "tests.fixtures.cyborg",
    "tests.fixtures.cyborg_server",
    "tests.fixtures.databases",
    "tests.fixtures.ironic",
    "tests.fixtures.keystone",
    "tests.fixtures.kube_apiserver",
    "tests.fixtures.nova",
    "tests.fixtures.nova_standin",
    "tests.fixtures.placement",
    "tests.fixtures.rabbitmq",
    "tests.unit.ironic_accel.recorded_bmc",
]
