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

"""``bash tools/demo`` (``cyborg-lite-demo``): the README's first command.

The whole story on embedded defaults must run to the end, say what it did,
and leave nothing behind.
"""

import os

from accel_tools.demo import main as demo


def test_demo_runs_the_whole_story_and_cleans_up(tmp_path, capsys):
    state = tmp_path / "state"
    assert demo.main(["--state-dir", str(state)]) == 0
    out = capsys.readouterr().out
    for text in (
            "fpga0  FPGA  Intel PAC Arria10  0000:5e:00.0  firmware 2.0.1",
            "the BMC's FirmwareInventory reports fpga0 at 2.1.0",
            "└─ compute-1.example.org_0000:5e:00.0_0  [FPGA total 1",
            # Nova's lookup was routed: the group requires the lock trait of
            # the regions kept for boots asking for no function.
            "GET /allocation_candidates?requireddevice_profile_0="
            "CUSTOM_ACCEL_LOCKED_EMPTY%2CCUSTOM_FPGA_INTEL_PAC_ARRIA10",
            '"state": "Bound"',
            "PCI device 0000:5e:00.1",
            "Demo finished: every step answered as expected."):
        assert text in out, out
    if "not part of this build" not in out:
        assert "function traits after: "\
               "['CUSTOM_FPGA_FUNCTION_ID_INTEL_NLB0']" in out, out
    assert not os.path.exists(state)


def test_demo_kubernetes_walks_a_claim_to_a_container(tmp_path, capsys):
    state = tmp_path / "k8s"
    assert demo.main(["--kubernetes", "--state-dir", str(state)]) == 0
    out = capsys.readouterr().out
    for text in (
            "kubelet's GetInfo: type DRAPlugin",
            "fpga-0000-5e-00-0-r0: FPGA region 0",
            "CDI device ID: accel.cyborg-lite.openstack.org/accelerator=",
            "region 0 now runs nlb0 (sim agent)",
            "ARQs of the claim left in cyborg_lite: 0; CDI spec present: "
            "False",
            "Demo finished: every step answered as expected."):
        assert text in out, out
    # The container step ran, or says why it could not.
    assert ("PCIDEVICE_ACCEL_CYBORG_LITE_OPENSTACK_ORG_FPGA=0000:5e:00.1"
            in out or "skipped: " in out), out
    assert not os.path.exists(state)
