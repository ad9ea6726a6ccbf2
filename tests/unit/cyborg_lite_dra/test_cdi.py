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

import json
import os

import pytest

from cyborg_lite_dra import cdi

DRIVER = "accel.cyborg-lite.openstack.org"


def _spec(**overrides):
    spec = {"cdiVersion": "0.3.0", "kind": f"{DRIVER}/accelerator",
            "devices": [{"name": "a-dev", "containerEdits": {
                "deviceNodes": [{"path": "/dev/vfio/12"}]}}]}
    spec.update(overrides)
    return spec


@pytest.mark.parametrize("change, version", [
    ({}, "0.3.0"),
    ({"containerEdits": {"mounts": [{"hostPath": "/a",
                                     "containerPath": "/b",
                                     "type": "bind"}]}}, "0.4.0"),
    ({"devices": [{"name": "0abc-dev", "containerEdits": {}}]}, "0.5.0"),
    ({"containerEdits": {"deviceNodes": [{"path": "/dev/x",
                                          "hostPath": "/dev/null"}]}},
     "0.5.0"),
    ({"annotations": {"a": "b"}}, "0.6.0"),
    ({"kind": f"{DRIVER}/acc.elerator"}, "0.6.0"),
    ({"containerEdits": {"additionalGids": [5]}}, "0.7.0"),
])
def test_minimum_version_follows_the_cdi_library_rules(change, version):
    assert cdi.minimum_version(_spec(**change)) == version


def test_build_spec_names_devices_after_the_claim_and_picks_the_version():
    spec = cdi.build_spec(DRIVER, "c1a1m", [
        ("fpga-r0", {"deviceNodes": [{"path": "/dev/vfio/7"}]})])
    assert spec == {"cdiVersion": "0.3.0", "kind": f"{DRIVER}/accelerator",
                    "devices": [{"name": "c1a1m-fpga-r0", "containerEdits": {
                        "deviceNodes": [{"path": "/dev/vfio/7"}]}}]}
    # A uid starting with a digit needs 0.5.0 (podman 4.3 reads it).
    assert cdi.build_spec(DRIVER, "7f00", [])["cdiVersion"] == "0.3.0"
    assert cdi.build_spec(DRIVER, "7f00", [("d", {})])["cdiVersion"] == \
        "0.5.0"


def test_device_id_is_kind_equals_name():
    assert cdi.device_id(DRIVER, "u1", "fpga-r0") == \
        f"{DRIVER}/accelerator=u1-fpga-r0"
    with pytest.raises(ValueError, match="not a valid CDI device name"):
        cdi.device_name("u1", "bad name")


def test_write_and_remove_spec(tmp_path):
    spec = cdi.build_spec(DRIVER, "u1", [("d", {})])
    path = cdi.write_spec(str(tmp_path), DRIVER, "u1", spec)
    assert os.path.basename(path) == f"{DRIVER}-accelerator_u1.json"
    assert json.loads(open(path).read()) == spec
    assert oct(os.stat(path).st_mode & 0o777) == "0o644"
    cdi.remove_spec(str(tmp_path), DRIVER, "u1")
    cdi.remove_spec(str(tmp_path), DRIVER, "u1")
    assert list(tmp_path.iterdir()) == []
