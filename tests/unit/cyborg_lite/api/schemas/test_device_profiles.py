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


"""Device profile group rules."""

import pytest

from cyborg_lite import exception
from cyborg_lite.api import schemas
from cyborg_lite.api.schemas import device_profiles as dp


@pytest.mark.parametrize("group", [
    {"resources:FPGA": "1"}, {"resources:CUSTOM_ACCEL": "3"},
    {"resources: PGPU ": "1", "trait:CUSTOM_NVIDIA_1EB8": "required"},
    {"resources:FPGA": "1", "accel:function_id": "gzip",
     "accel:whatever": "kept"},
])
def test_good_groups(group):
    dp.check_groups(dp.normalize_groups([group]))


@pytest.mark.parametrize("group, needle", [
    ({"resource:FPGA": "1"}, "must start with"),
    ({"resources:SRIOV_NET_VF": "1"}, "SRIOV_NET_VF"),
    ({"resources:FPGA": "1.5"}, "not an integer"),
    ({"resources:FPGA": "0"}, "at least 1"),
    ({"trait:HW_CPU_X86_AVX": "required"}, "CUSTOM_"),
    ({"trait:CUSTOM_X": "preferred"}, "'required' or 'forbidden'"),
    ({"accel:function_id": "a", "accel:bitstream_id": "b"},
     "mutually exclusive"),
])
def test_bad_groups_name_the_problem(group, needle):
    with pytest.raises(exception.Invalid) as info:
        dp.check_groups(dp.normalize_groups([group]))
    assert needle in info.value.message


def test_group_amount_sums_resources():
    assert dp.group_amount({"resources:FPGA": "2", "resources:CUSTOM_X": "1",
                            "trait:CUSTOM_Y": "required"}) == 3


def test_create_schema_wants_a_list_of_one():
    body = {"name": "x", "groups": [{"resources:FPGA": "1"}]}
    schemas.validate(dp.CREATE, [body])
    for bad in (body, [], [body, body], [{"name": "x"}]):
        with pytest.raises(exception.Invalid):
            schemas.validate(dp.CREATE, bad)
