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

"""Function pool policies as operators write them."""

import pytest

from cyborg_lite.programming import pools


def test_policy_with_count_and_resource_class():
    pool = pools.parse_policy("nlb0:2:FPGA")
    assert (pool.name, pool.function_id, pool.min_ready,
            pool.resource_class) == ("config:nlb0:FPGA", "nlb0", 2, "FPGA")


def test_policy_without_resource_class_takes_any():
    pool = pools.parse_policy(" gzip : 1 ")
    assert (pool.name, pool.function_id, pool.min_ready,
            pool.resource_class) == ("config:gzip", "gzip", 1, None)


@pytest.mark.parametrize("entry, reason", [
    ("nlb0", "expected FUNCTION:N[:RESOURCE_CLASS]"),
    (":2", "expected FUNCTION:N[:RESOURCE_CLASS]"),
    ("nlb0:two", "N must be an integer, got 'two'"),
    ("nlb0:-1", "N must not be negative"),
    ("a:1:b:c", "expected FUNCTION:N[:RESOURCE_CLASS]"),
])
def test_bad_policy_is_refused_naming_the_problem(entry, reason):
    with pytest.raises(pools.InvalidPolicy) as info:
        pools.parse_policy(entry)
    assert entry in info.value.message and reason in info.value.message


def test_config_names_are_reserved():
    with pytest.raises(pools.InvalidPolicy, match="reserved"):
        pools.set_pool(None, "config:x", "x", 1)
