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

"""The committed gRPC modules are what grpcio-tools makes of the committed
.proto files (tools/generate-dra-protos), and they carry the kubelet's
package, service and method names."""

import pathlib
import shutil

from grpc_tools import protoc
import pytest

from cyborg_lite_dra.kubelet.dra.v1 import api_pb2 as dra_v1
from cyborg_lite_dra.kubelet.dra.v1beta1 import api_pb2 as dra_v1beta1
from cyborg_lite_dra.kubelet.pluginregistration.v1 import (
    api_pb2 as registration,
)

ROOT = pathlib.Path(__file__).resolve().parents[3]
PROTOS = sorted(p.relative_to(ROOT)
                for p in (ROOT / "cyborg_lite_dra" / "kubelet").rglob(
                    "*.proto"))


def test_generated_modules_are_current(tmp_path):
    for proto in PROTOS:
        target = tmp_path / proto
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / proto, target)
    args = ["protoc", f"-I{tmp_path}", f"--python_out={tmp_path}",
            f"--grpc_python_out={tmp_path}"] + [str(p) for p in PROTOS]
    assert protoc.main(args) == 0
    for proto in PROTOS:
        for suffix in ("_pb2.py", "_pb2_grpc.py"):
            name = proto.with_name(proto.stem + suffix)
            assert (tmp_path / name).read_text() == \
                (ROOT / name).read_text(), (
                f"{name} is out of date: run tools/generate-dra-protos")


@pytest.mark.parametrize("module, service", [
    (dra_v1, "k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin"),
    (dra_v1beta1, "k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin"),
])
def test_dra_service_and_field_numbers_are_upstream_s(module, service):
    (found,) = module.DESCRIPTOR.services_by_name.values()
    assert found.full_name == service
    assert sorted(found.methods_by_name) == ["NodePrepareResources",
                                             "NodeUnprepareResources"]
    fields = {f.name: f.number
              for f in module.DESCRIPTOR.message_types_by_name[
                  "Device"].fields}
    assert fields == {"request_names": 1, "pool_name": 2, "device_name": 3,
                      "cdi_device_ids": 4}
    claim = module.DESCRIPTOR.message_types_by_name["Claim"]
    assert {f.name: f.number for f in claim.fields} == {
        "namespace": 1, "uid": 2, "name": 3}
    response = module.DESCRIPTOR.message_types_by_name[
        "NodePrepareResourceResponse"]
    assert {f.name: f.number for f in response.fields} == {"devices": 1,
                                                           "error": 2}


def test_registration_is_upstream_s():
    service = registration.DESCRIPTOR.services_by_name["Registration"]
    assert service.full_name == "pluginregistration.Registration"
    info = registration.DESCRIPTOR.message_types_by_name["PluginInfo"]
    assert {f.name: f.number for f in info.fields} == {
        "type": 1, "name": 2, "endpoint": 3, "supported_versions": 4}
