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

import pytest

from cyborg_lite_dra import claims

DRIVER = "accel.cyborg-lite.openstack.org"


def _config(parameters, requests=(), driver=DRIVER, source="FromClass"):
    return {"source": source, "requests": list(requests),
            "opaque": {"driver": driver, "parameters": parameters}}


def test_the_claim_s_configuration_wins_over_the_class_s():
    config = [_config({"deviceProfile": "from-class"}),
              _config({"deviceProfile": "other-driver"},
                      driver="gpu.example.com"),
              _config({"deviceProfile": "from-claim"}, ["gpu"],
                      source="FromClaim")]
    result = {"request": "gpu"}
    assert claims._profile_of(config, result, DRIVER, "") == "from-claim"
    assert claims._profile_of(config, {"request": "nic"}, DRIVER, "") == \
        "from-class"


def test_a_subrequest_takes_its_parent_s_configuration():
    config = [_config({"deviceProfile": "fpga"}, ["accel"])]
    assert claims._profile_of(config, {"request": "accel/big"}, DRIVER,
                              "") == "fpga"


def test_the_default_profile_applies_when_none_is_given():
    assert claims._profile_of([], {"request": "r"}, DRIVER, "dflt") == "dflt"
    with pytest.raises(claims.ClaimError, match="set \\[dra\\] "
                                                "device_profile"):
        claims._profile_of([], {"request": "r"}, DRIVER, "")


@pytest.mark.parametrize("parameters, message", [
    ("fpga", "must be a JSON object"),
    ({"deviceProfile": ""}, "must be a non-empty string"),
    ({"deviceProfile": 3}, "must be a non-empty string"),
    ({"deviceProfile": "x", "function": "y"}, "unknown key\\(s\\) function"),
])
def test_bad_configuration_is_named(parameters, message):
    with pytest.raises(claims.ClaimError, match=message):
        claims._profile_of([_config(parameters)], {"request": "r"}, DRIVER,
                           "dflt")
