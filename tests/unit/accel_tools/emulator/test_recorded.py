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


"""Recordings: credentials removed, loaded, served read-only, recorded back."""

import base64
import os
import threading

import pytest
from werkzeug import serving

from accel_tools.emulator import main
from accel_tools.emulator import record_cli
from accel_tools.emulator import recorded

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "..", "data", "redfish")


def _basic(user, password):
    return {"Authorization": "Basic " + base64.b64encode(
        f"{user}:{password}".encode()).decode()}


def test_scrub_removes_credentials_at_any_depth():
    doc = {"Id": "1", "Oem": {"Hpe": {"Password": "x", "Links": [{"AuthToken": "t",
                                                                    "Name": "n"}]}},
           "SNMP": {"CommunityStrings": ["public"]}, "PublicKey": "kept"}
    clean, removed = recorded.scrub(doc)
    assert clean == {"Id": "1", "Oem": {"Hpe": {"Links": [{"Name": "n"}]}}, "SNMP": {},
                     "PublicKey": "kept"}
    assert removed == ["/Oem/Hpe/Password", "/Oem/Hpe/Links/0/AuthToken",
                       "/SNMP/CommunityStrings"]
    assert doc["Oem"]["Hpe"]["Password"] == "x"  # the input is left alone


def test_load_tree_maps_paths():
    tree = recorded.load_tree(os.path.join(DATA, "dmtf-public-cxl"))
    assert tree["/redfish/v1/"]["Id"] == "RootService"
    assert "/redfish/v1/Chassis/CXLType1/Processors/FPGA" in tree


def test_load_tree_without_root_is_refused(tmp_path):
    with pytest.raises(ValueError, match="no service root"):
        recorded.load_tree(str(tmp_path))


def test_replay_app_serves_read_only_with_auth():
    tree = recorded.load_tree(os.path.join(DATA, "dmtf-public-cxl"))
    client = recorded.create_app(tree, "admin", "pw").test_client()
    assert client.get("/redfish/v1/").get_json()["Id"] == "RootService"
    assert client.get("/redfish/v1/Systems").status_code == 401
    auth = _basic("admin", "pw")
    assert client.get("/redfish/v1/Systems/", headers=auth).get_json()["Members"]
    assert client.get("/redfish/v1/Nothing", headers=auth).status_code == 404
    rsp = client.post("/redfish/v1/Systems", headers=auth, json={})
    assert rsp.status_code == 405
    assert "read-only" in rsp.get_json()["error"]["message"]


@pytest.fixture
def served():
    tree = recorded.load_tree(os.path.join(DATA, "project-spellings"))
    server = serving.make_server("127.0.0.1", 0, recorded.create_app(tree), threaded=True)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield tree, "http://127.0.0.1:%d" % server.port
    server.shutdown()
    server.server_close()


def test_record_follows_what_discovery_reads(served, tmp_path):
    tree, url = served
    summary = recorded.record(url, str(tmp_path))
    recording = recorded.load_tree(str(tmp_path))
    assert recording == {path: doc for path, doc in tree.items() if path in recording}
    for path in ("/redfish/v1/Systems/1/PCIeDevices/GPU1/PCIeFunctions/0",
                 "/redfish/v1/Chassis/1/PCIeDevices/Slot4/PCIeFunctions/0",
                 "/redfish/v1/UpdateService/FirmwareInventory/GPU1_VBIOS"):
        assert path in recording
    assert "/redfish/v1/Chassis" not in recording  # the collection is not read
    assert summary["failed"] == {} and summary["removed"] == {}


def test_record_follows_network_adapters_of_contained_chassis(tmp_path):
    tree = recorded.load_tree(os.path.join(DATA, "dmtf-public-smartnic"))
    server = serving.make_server("127.0.0.1", 0, recorded.create_app(tree), threaded=True)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        summary = recorded.record("http://127.0.0.1:%d" % server.port, str(tmp_path))
    finally:
        server.shutdown()
        server.server_close()
    recording = recorded.load_tree(str(tmp_path))
    # NOTE(emulator): Card2 is only in 1U's Links.Contains, not in the
    # Chassis collection.
    for path in ("/redfish/v1/Chassis/Card2/NetworkAdapters/Slot2",
                 "/redfish/v1/Chassis/Card2/NetworkAdapters/Slot2/NetworkDeviceFunctions/"
                 "SC2KP2F0",
                 "/redfish/v1/Chassis/Card1/NetworkAdapters/Slot1/NetworkDeviceFunctions/"
                 "SC2KP1F0"):
        assert recording[path] == tree[path]
    assert summary["failed"] == {}


def test_record_names_what_the_bmc_did_not_serve(tmp_path):
    tree = recorded.load_tree(os.path.join(DATA, "project-spellings"))
    del tree["/redfish/v1/Chassis/1/PCIeDevices/Slot4"]
    del tree["/redfish/v1/UpdateService/FirmwareInventory/GPU1_VBIOS"]
    server = serving.make_server("127.0.0.1", 0, recorded.create_app(tree), threaded=True)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        summary = recorded.record("http://127.0.0.1:%d" % server.port, str(tmp_path))
    finally:
        server.shutdown()
        server.server_close()
    # A link the BMC does not serve is named, not fatal.
    assert summary["failed"] == {
        "/redfish/v1/Chassis/1/PCIeDevices/Slot4": 404,
        "/redfish/v1/UpdateService/FirmwareInventory/GPU1_VBIOS": 404}
    assert "/redfish/v1/Chassis/1/PCIeDevices/GPU0" in summary["resources"]


@pytest.mark.parametrize("url", ["ftp://bmc", "bmc.example.org", "http://"])
def test_record_refuses_what_is_not_a_bmc_url(url, tmp_path):
    with pytest.raises(recorded.RecordError, match="not an http"):
        recorded.record(url, str(tmp_path))


def test_record_without_service_root_fails_clearly(tmp_path):
    with pytest.raises(recorded.RecordError, match="service root"):
        recorded.record("http://127.0.0.1:9", str(tmp_path), timeout=2)


def test_main_dispatches_record_and_replay(monkeypatch, tmp_path, capsys):
    served_apps = []
    monkeypatch.delenv(record_cli.PASSWORD_ENV, raising=False)
    assert main.main(["record", "--url", "http://127.0.0.1:9", "--username", "u",
                      "--out", str(tmp_path)]) == 2
    assert record_cli.PASSWORD_ENV in capsys.readouterr().err
    assert record_cli.main(["replay", "--tree", str(tmp_path)],
                           lambda *a: served_apps.append(a)) == 2
    assert "no service root" in capsys.readouterr().err
    record_cli.main(["replay", "--tree", os.path.join(DATA, "dmtf-public-cxl"), "--port", "1"],
                    lambda app, host, port: served_apps.append((host, port)))
    assert served_apps == [("127.0.0.1", 1)]
