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


"""The emulator as tests use it: a subprocess, images over HTTP, a restart
in the middle of an update, and an outage."""

import requests
import sushy

from accel_tools.embedded.images import make_firmware_image

SIMPLE_UPDATE = "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate"


def test_update_survives_an_emulator_restart(bmc_emulator, image_server, tmp_path):
    path, checksum = make_firmware_image(tmp_path, "2.1.0")
    assert checksum.startswith("sha256:") and len(checksum) == 7 + 64
    bmc_emulator.set_faults(task_seconds=2)
    fpga = bmc_emulator.system_uri() + "/Processors/FPGA0"
    conn = bmc_emulator.sushy()
    monitor = conn.get_update_service().simple_update(image_server.url_for(path),
                                                      targets=[fpga])
    assert monitor.is_processing

    bmc_emulator.restart()
    monitor.wait(20)
    task = monitor.get_task()
    assert task.task_state == sushy.TaskState.COMPLETED
    assert image_server.downloads == ["/" + path.name]
    version = requests.get(bmc_emulator.url + "/redfish/v1/UpdateService/FirmwareInventory/1-FPGA0",
                           auth=(bmc_emulator.username, bmc_emulator.password)).json()["Version"]
    assert version == "2.1.0"
    sent = [r for r in bmc_emulator.requests() if r["path"] == SIMPLE_UPDATE]
    assert len(sent) == 1 and sent[0]["body"]["Targets"] == [fpga]


def test_outage_and_recovery(bmc_emulator):
    auth = (bmc_emulator.username, bmc_emulator.password)
    bmc_emulator.set_faults(unavailable_seconds=0.5)
    system = bmc_emulator.url + bmc_emulator.system_uri()
    assert requests.get(system, auth=auth).status_code == 503
    # sushy retries a GET on 5xx, so a short outage is invisible to it.
    conn = sushy.Sushy(bmc_emulator.url + "/redfish/v1", auth=sushy.auth.BasicAuth(*auth),
                       server_side_retries=5, server_side_retries_delay=0.3)
    assert conn.get_system(bmc_emulator.system_uri()).identity == "1"
    assert bmc_emulator.state()["systems"]["1"]["power_state"] == "On"
