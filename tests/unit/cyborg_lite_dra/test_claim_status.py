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

"""ResourceClaim.status.devices from a prepared claim's bound ARQs."""

from cyborg_lite_dra import claim_status
from tests.fixtures import kube_apiserver

DRIVER = "accel.cyborg-lite.openstack.org"


def _arq(uuid, rp, function="1", handle_type="PCI", **info):
    base = {"domain": "0000", "bus": "5e", "device": "00",
            "function": function}
    base.update(info)
    return {"uuid": uuid, "device_rp_uuid": rp, "state": "Bound",
            "attach_handle_type": handle_type, "attach_handle_info": base}


def _record(*entries):
    return {"arqs": {arq: {"request": "accel", "pool": "node-1",
                           "device": device, "rp_uuid": rp}
                     for arq, device, rp in entries}}


def _claim(*devices):
    return {"status": {"allocation": {"devices": {"results": [
        {"request": "accel", "driver": DRIVER, "pool": "node-1",
         "device": d} for d in devices]}}}}


def test_a_bind_moved_to_a_sibling_region_names_both_providers(tmp_path):
    record = _record(("a1", "fpga-r0", "rp-0"))
    arqs = {"a1": _arq("a1", "rp-1", function="5")}

    (status,) = claim_status.device_statuses(DRIVER, record, arqs,
                                             str(tmp_path))

    assert status["device"] == "fpga-r0"
    assert status["data"] == {"handles": [{
        "pciBusID": "0000:5e:00.5", "type": "PCI",
        "acceleratorRequest": "a1", "resourceProviderUUID": "rp-1",
        "allocatedResourceProviderUUID": "rp-0"}]}
    assert "networkData" not in status
    assert kube_apiserver.validate_claim_status(
        _claim("fpga-r0"), {"devices": [status]}) == []


def test_handles_of_one_device_are_reported_together():
    record = _record(("a1", "vgpu", "rp-0"), ("a2", "vgpu", "rp-0"),
                     ("a3", "fpga-r1", "rp-1"))
    arqs = {"a1": _arq("a1", "rp-0", handle_type="MDEV",
                       asked_type="nvidia-222"),
            "a2": _arq("a2", "rp-0", function="2"),
            "a3": _arq("a3", "rp-1", function="3",
                       physical_network="physnet1")}

    statuses = claim_status.device_statuses(DRIVER, record, arqs,
                                            "/nonexistent")

    assert [s["device"] for s in statuses] == ["fpga-r1", "vgpu"]
    assert statuses[0]["data"]["handles"][0]["physicalNetwork"] == "physnet1"
    assert [h["pciBusID"] for h in statuses[1]["data"]["handles"]] == [
        "0000:5e:00.1", "0000:5e:00.2"]
    assert statuses[1]["data"]["handles"][0]["mdevType"] == "nvidia-222"
    assert kube_apiserver.validate_claim_status(
        _claim("fpga-r1", "vgpu"), {"devices": statuses}) == []


def test_the_validator_refuses_an_entry_for_a_device_not_allocated():
    (status,) = claim_status.device_statuses(
        DRIVER, _record(("a1", "fpga-r0", "rp-0")),
        {"a1": _arq("a1", "rp-0")})
    problems = kube_apiserver.validate_claim_status(
        _claim("other"), {"devices": [status]})
    assert any("is not allocated" in p for p in problems)
    status["networkData"] = {"ips": ["10.0.0.1"], "typo": 1}
    assert kube_apiserver.validate_claim_status(
        _claim("fpga-r0"), {"devices": [status]})
