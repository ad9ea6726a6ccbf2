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

from urllib import parse

import pytest

from accel_tools import request_groups


def test_querystring_as_nova_renders_it():
    groups = [{"resources:FPGA": "1", "trait:CUSTOM_X": "required"}]
    assert request_groups.querystring(groups) == (
        "requireddevice_profile_0=CUSTOM_X&resourcesdevice_profile_0=FPGA%3A1")


def test_group_index_is_the_suffix():
    groups = [{"resources:FPGA": "1"}, {"resources:PGPU": "2"}]
    params = dict(request_groups.query_params(groups, group_policy="none"))
    assert params == {"group_policy": "none",
                      "resourcesdevice_profile_0": "FPGA:1",
                      "resourcesdevice_profile_1": "PGPU:2"}


def test_forbidden_traits_are_negated_after_required():
    groups = [{"resources:FPGA": "1", "trait:CUSTOM_B": "forbidden",
               "trait:CUSTOM_A": "required", "trait:CUSTOM_C": "required"}]
    params = dict(request_groups.query_params(groups))
    assert params["requireddevice_profile_0"] == "CUSTOM_A,CUSTOM_C,!CUSTOM_B"


def test_invalid_entries_are_dropped_like_nova():
    groups = [{"resources:GPU": "1", "resources:CUSTOM_QAT": "x",
               "resources:FPGA": "-1", "resources: PGPU ": "1",
               "trait:CUSTOM_A": "maybe", "accel:function_id": "gzip"}]
    (group,) = request_groups.request_groups(groups)
    assert group.resources == {"PGPU": 1}
    assert not group.required_traits and not group.forbidden_traits


def test_zero_amounts_are_stripped_and_empty_groups_skipped():
    groups = [{"resources:FPGA": "0"}, {"resources:PGPU": "1"}]
    params = request_groups.query_params(groups)
    assert params == [("resourcesdevice_profile_1", "PGPU:1")]
    assert len(request_groups.request_groups(groups)) == 2


def test_root_required_limit_and_flavor_resources():
    query = request_groups.querystring(
        [{"resources:FPGA": "1"}], root_required=["COMPUTE_ACCELERATORS"],
        limit=100, unnumbered_resources={"VCPU": 2, "MEMORY_MB": 512})
    assert parse.parse_qs(query) == {
        "limit": ["100"], "root_required": ["COMPUTE_ACCELERATORS"],
        "resources": ["MEMORY_MB:512,VCPU:2"],
        "resourcesdevice_profile_0": ["FPGA:1"]}


def test_groups_must_be_a_list_of_objects():
    with pytest.raises(ValueError, match="list of objects"):
        request_groups.request_groups({"resources:FPGA": "1"})
