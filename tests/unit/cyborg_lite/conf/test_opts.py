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


"""Option modules are found and published for oslo-config-generator."""

from cyborg_lite.conf import opts


def test_service_option_groups_are_listed():
    groups = {}
    for group, options in opts.list_opts():
        groups.setdefault(group, set()).update(o.dest for o in options)
    assert {"auth_strategy", "state_path"} <= groups["DEFAULT"]
    assert {"host", "port", "service_token_roles"} <= groups["api"]
    assert {"auth_url", "username", "password", "project_name"} <= (
        groups["keystone_authtoken"])
    assert {"detailed", "backends"} <= groups["healthcheck"]
    assert groups["database"] >= {"connection"}
    assert groups["noauth"] >= {"default_project_id", "default_roles"}
    assert groups["nova"] >= {"notify_retries", "notify_retry_interval"}
