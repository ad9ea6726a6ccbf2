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

"""A card its BMC reports unhealthy, end to end: the BMC emulator's
Processor and PCIe device say ``Status.Health``, ironic_accel's discovery
reads them into the node's inventory document, cyborg_lite applies it, and
the plugin taints the card's devices (``<driver>/unhealthy``), every write
valid against the upstream schema; back to ``OK``, the taints go."""

import types

import pytest

from accel_tools.embedded import bmc as embedded_bmc
from cyborg_lite.inventory import apply as inventory_apply
from ironic_accel import discovery
from ironic_accel.redfish import client as redfish_client
from tests.functional.cyborg_lite_dra import env


def _card(cyborg_lite, health):
    """The emulator's description of cyborg_lite's FPGA: same address, ids
    and regions, so the BMC's document names the same providers."""
    device = cyborg_lite.device
    return [{"id": "FPGA0", "type": "FPGA", "manufacturer": "Intel",
             "model": "PAC Arria10", "vendor_id": device["vendor_id"],
             "device_id": device["product_id"],
             "pci_address": device["pci_address"],
             "firmware_version": "2.0.1",
             "slots": [{"id": r["id"]} for r in device["regions"]],
             "health": health}]


@pytest.fixture
def bmc(tmp_path, cyborg_lite):
    (tmp_path / "bmc").mkdir()
    emulator = embedded_bmc.BmcEmulator(
        tmp_path / "bmc", devices={"1": _card(cyborg_lite, "OK")})
    emulator.start()
    redfish_client.clear_cache()
    yield emulator
    emulator.stop()
    redfish_client.clear_cache()


def _refresh(bmc, cyborg_lite):
    """What an inventory refresh does: ironic_accel reads the BMC into the
    node's document; cyborg_lite applies it. Returns the document."""
    node = types.SimpleNamespace(
        uuid=cyborg_lite.document["node_uuid"], id=1, name=cyborg_lite.host,
        driver="accel-redfish", extra={}, instance_info={},
        driver_info=dict(bmc.driver_info(), redfish_auth_type="basic"))
    document = discovery.read_document(node)
    inventory_apply.apply_document(cyborg_lite.db, document)
    return document


def _devices(kube_apiserver, node):
    """The devices of the node's one slice (none before it is published)."""
    return [d for s in kube_apiserver.slices.values()
            if s["spec"]["nodeName"] == node for d in s["spec"]["devices"]]


@pytest.mark.parametrize("health, effect", [("Critical", "NoExecute"),
                                            ("Warning", "NoSchedule")])
def test_a_card_the_bmc_reports_unhealthy_is_tainted_until_ok(
        bmc, plugin_factory, cyborg_lite, kube_apiserver, health, effect):
    document = _refresh(bmc, cyborg_lite)
    (device,) = document["devices"]
    assert device["health"] == "OK"
    assert [r["rp_uuid"] for r in device["regions"]] == cyborg_lite.rps
    plugin = plugin_factory(**{"dra.device_taints": "true"}).start()
    env.wait(lambda: len(_devices(kube_apiserver, plugin.node)) == 2,
             "the slice")
    assert not any(d.get("taints")
                   for d in _devices(kube_apiserver, plugin.node))

    bmc.set_devices(_card(cyborg_lite, health))
    (device,) = _refresh(bmc, cyborg_lite)["devices"]
    assert device["health"] == health

    def tainted():
        devices = _devices(kube_apiserver, plugin.node)
        return all(d.get("taints") for d in devices) and devices

    for entry in env.wait(tainted, "the taints"):
        assert entry["taints"] == [{
            "key": f"{env.DRIVER}/unhealthy", "value": health.lower(),
            "effect": effect}]
        assert entry["attributes"]["health"] == {"string": health.lower()}

    bmc.set_devices(_card(cyborg_lite, "OK"))
    _refresh(bmc, cyborg_lite)

    def untainted():
        devices = _devices(kube_apiserver, plugin.node)
        return not any(d.get("taints") for d in devices) and devices

    for entry in env.wait(untainted, "the taints gone"):
        assert entry["attributes"]["health"] == {"string": "ok"}
    assert all(problems == [] for _, _, problems in kube_apiserver.writes)


def test_cyborg_lite_shows_the_health_at_2_4(bmc, cyborg_lite):
    bmc.set_devices(_card(cyborg_lite, "Critical"))
    _refresh(bmc, cyborg_lite)
    admin = dict(env.ADMIN, **{"OpenStack-API-Version": "accelerator 2.4"})
    status, body = cyborg_lite.call(
        "GET", f"/v2/devices?hostname={cyborg_lite.host}", admin)
    assert status == 200, body
    assert [d["health"] for d in body["devices"]] == ["Critical"]
    status, body = cyborg_lite.call(
        "GET", f"/v2/devices?hostname={cyborg_lite.host}", env.ADMIN)
    assert "health" not in body["devices"][0]
