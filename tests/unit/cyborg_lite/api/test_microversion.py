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


"""Parsing OpenStack-API-Version."""

import pytest

from cyborg_lite import exception
from cyborg_lite.api import microversion


@pytest.mark.parametrize("value, expected", [
    (None, "2.0"), ("", "2.0"), ("accelerator 2.1", "2.1"), ("2.2", "2.2"),
    ("latest", "2.4"), ("Accelerator LATEST", "2.4"),
    ("compute 2.1, accelerator 2.3", "2.3"), ("accelerator 02.1", "2.1"),
])
def test_parse_accepts(value, expected):
    assert str(microversion.parse(value)) == expected


@pytest.mark.parametrize("value", ["accelerator 2.5", "3.0", "1.0", "2",
                                   "accelerator x.y", "one two three",
                                   "compute 2.1"])
def test_parse_refuses_with_406(value):
    with pytest.raises(exception.VersionNotAcceptable) as info:
        microversion.parse(value)
    assert info.value.code == 406


def test_versions_declared_once_in_order():
    assert microversion.VERSIONS == ["2.0", "2.1", "2.2", "2.3", "2.4"]
    assert microversion.Version("2.10") > microversion.Version("2.3")
