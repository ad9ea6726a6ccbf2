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

import copy
import json
import logging

import pytest

from cyborg_lite.agent import exception as agent_exception
from cyborg_lite.agent.drivers import sim
from cyborg_lite.inventory import handle_discovery


@pytest.fixture
def full():
    """The sim inventory: what the agent discovers, handles included."""
    with open(sim.default_inventory_file()) as handle:
        return json.load(handle)


@pytest.fixture
def document(full):
    """The same devices as Ironic reports them: no handles."""
    stripped = copy.deepcopy(full)
    for device in stripped["devices"]:
        for region in device["regions"]:
            region.pop("attach_handles")
    return stripped


class Agent:
    """Answers ``discover`` as an agent would, or fails as ``error``."""

    def __init__(self, devices=None, error=None):
        self.devices, self.error, self.asked = devices, error, []

    def discover(self, host):
        self.asked.append(host)
        if self.error is not None:
            raise self.error
        return {"host": host, "devices": self.devices}


def _labels(document):
    return [f"{d['pci_address'].lower()}/{r['id']}"
            for d in document["devices"] for r in d["regions"]]


def test_fill_handles_from_agent(document, full):
    agent = Agent(devices=full["devices"])

    filled, report = handle_discovery.fill_handles(document, agent,
                                                   agent_host="embedded")

    assert agent.asked == ["embedded"]
    assert report["source"] == handle_discovery.AGENT
    assert report["filled"] == _labels(document)
    assert report["kept"] == [] and report["error"] is None
    assert [r["attach_handles"] for d in filled["devices"]
            for r in d["regions"]] == [r["attach_handles"]
                                       for d in full["devices"]
                                       for r in d["regions"]]
    assert handle_discovery.regions_without_handles(document)  # unchanged


def test_fill_handles_document_with_handles_does_not_ask(full):
    agent = Agent(error=AssertionError("must not be asked"))

    same, report = handle_discovery.fill_handles(full, agent)

    assert same is full and agent.asked == []
    assert report["source"] == handle_discovery.DOCUMENT


@pytest.mark.parametrize("error", [
    agent_exception.AgentTimeout(host="h", method="discover",
                                 waited="within 1 s"),
    agent_exception.AgentUnreachable(host="h", method="discover",
                                     attempts=3, reason="refused"),
])
def test_fill_handles_agent_failure_keeps_known(document, error, caplog):
    caplog.set_level(logging.WARNING)

    same, report = handle_discovery.fill_handles(document,
                                                 Agent(error=error))

    assert same is document
    assert report["source"] == handle_discovery.KEPT
    assert report["error"] == str(error)
    assert report["kept"] == _labels(document)
    assert "handles already known" in caplog.text
    assert document["host"] in caplog.text


def test_fill_handles_unmatched_devices_are_logged_not_added(document, full,
                                                             caplog):
    caplog.set_level(logging.WARNING)
    stranger = copy.deepcopy(full["devices"][0])
    stranger["pci_address"] = "0000:d8:00.0"

    filled, report = handle_discovery.fill_handles(
        document, Agent(devices=full["devices"] + [stranger]))

    assert report["unmatched"] == ["0000:d8:00.0"]
    assert "0000:d8:00.0" in caplog.text
    assert [d["pci_address"] for d in filled["devices"]] == [
        d["pci_address"] for d in document["devices"]]


def test_fill_handles_document_handles_win_and_gaps_are_kept(document,
                                                             full):
    # The document lists handles for the first region; the agent reports
    # other ones for it, and nothing for the last device.
    own = [{"type": "PCI", "pci_address": "0000:5e:02.1"}]
    document["devices"][0]["regions"][0]["attach_handles"] = own
    agent = Agent(devices=full["devices"][:-1])

    filled, report = handle_discovery.fill_handles(document, agent)

    assert filled["devices"][0]["regions"][0]["attach_handles"] == own
    last = document["devices"][-1]
    assert report["kept"] == [f"{last['pci_address'].lower()}/"
                              f"{r['id']}" for r in last["regions"]]
    assert all("attach_handles" not in r
               for r in filled["devices"][-1]["regions"])
    assert report["source"] == handle_discovery.AGENT


def test_fill_handles_answer_that_does_not_fit_is_reported(document):
    broken = [{"pci_address": document["devices"][0]["pci_address"],
               "regions": [{"id": "0", "attach_handles": [
                   {"type": "PCI", "pci_address": "0000:5e:00.1"},
                   {"type": "PCI", "pci_address": "0000:5e:00.1"}]}]}]

    same, report = handle_discovery.fill_handles(document,
                                                 Agent(devices=broken))

    assert same is document
    assert report["source"] == handle_discovery.KEPT
    assert "does not fit the document" in report["error"]


def _addressless(document, keep_ids=False):
    """``document`` as a BMC without PCI addresses reports it (1.1)."""
    result = copy.deepcopy(document)
    for device in result["devices"]:
        device["pci_address"] = None
        device["redfish_uri"] = ("/redfish/v1/Systems/1/Processors/"
                                 + device["id"])
        if not keep_ids:
            device["vendor_id"] = device["product_id"] = None
        for region in device["regions"]:
            region.pop("attach_handles", None)
    result["schema_version"] = "1.1"
    return result


def test_complete_devices_takes_address_and_ids_from_agent(document, full):
    bmc = _addressless(document)
    completed, done, incomplete = handle_discovery.complete_devices(
        bmc, full["devices"])
    assert incomplete == {}
    assert done == {d["id"]: d["pci_address"].lower()
                    for d in full["devices"]}
    for mine, agents in zip(completed["devices"], full["devices"]):
        assert (mine["pci_address"], mine["vendor_id"],
                mine["product_id"]) == (
            agents["pci_address"].lower(), agents["vendor_id"].lower(),
            agents["product_id"].lower())
    assert completed["schema_version"] == "1.0"
    assert bmc["devices"][0]["pci_address"] is None  # input unchanged


def _gpu(index, bus, product="0x20b0"):
    address = f"0000:{bus:02x}:00.0"
    return {"id": f"gpu{index}", "type": "GPU", "vendor": "NVIDIA",
            "vendor_id": "0x10de", "product_id": product,
            "pci_address": address, "program_mode": "single",
            "regions": [{
                "id": "0",
                "rp_uuid": f"00000000-0000-0000-0000-{index:012d}",
                "resource_class": "PGPU",
                "attach_handles": [{"type": "PCI", "pci_address": address}]}]}


def _doc(devices):
    return {"schema_version": "1.0", "host": "h", "devices": devices}


def test_complete_devices_pairs_alike_devices_in_order():
    # Four identical A100s in Redfish order GPU2, GPU0, GPU1, GPU10 (ids
    # sort naturally), four found in-band: paired in order.
    found = [_gpu(n, bus) for n, bus in enumerate((0xca, 0x17, 0x3d, 0x63))]
    bmc = _addressless(_doc([_gpu(n, 0) for n in (2, 0, 1, 10)]))
    for device in bmc["devices"]:
        device["model"] = "NVIDIA_A100-SXM4-40GB"
    _, done, incomplete = handle_discovery.complete_devices(bmc, found)
    assert incomplete == {}
    assert done == {"gpu0": "0000:17:00.0", "gpu1": "0000:3d:00.0",
                    "gpu2": "0000:63:00.0", "gpu10": "0000:ca:00.0"}


def test_complete_devices_leaves_what_cannot_be_paired_for_certain():
    found = [_gpu(0, 0x17), _gpu(1, 0x3d), _gpu(2, 0x63)]
    bmc = _addressless(_doc([_gpu(0, 0), _gpu(1, 0)]))
    completed, done, incomplete = handle_discovery.complete_devices(
        bmc, found)
    assert done == {}
    assert set(incomplete) == {"gpu0", "gpu1"}
    assert "cannot be paired for certain" in incomplete["gpu0"]
    assert all(d["pci_address"] is None for d in completed["devices"])


def test_complete_devices_matches_ids_when_known():
    found = [_gpu(0, 0x17, product="0x20b0"), _gpu(1, 0x3d, product="0x1eb8")]
    bmc = _addressless(_doc([_gpu(5, 0, product="0x1eb8")]), keep_ids=True)
    _, done, incomplete = handle_discovery.complete_devices(bmc, found)
    assert done == {"gpu5": "0000:3d:00.0"} and incomplete == {}


def test_complete_devices_other_vendor_does_not_fit():
    amd = dict(_gpu(0, 0x17), vendor="AMD", vendor_id="0x1002")
    bmc = _addressless(_doc([_gpu(0, 0)]))
    _, done, incomplete = handle_discovery.complete_devices(bmc, [amd])
    assert done == {}
    assert incomplete == {"gpu0": "the agent found no device that fits"}


def test_fill_handles_completes_then_fills(document, full):
    agent = Agent(devices=full["devices"])
    filled, report = handle_discovery.fill_handles(_addressless(document),
                                                   agent)
    assert report["source"] == handle_discovery.AGENT
    assert report["completed"] and report["incomplete"] == {}
    assert sorted(report["filled"]) == sorted(_labels(full))
    assert [(d["pci_address"], d["regions"]) for d in filled["devices"]] == [
        (d["pci_address"].lower(), d["regions"]) for d in full["devices"]]


def test_fill_handles_agent_down_names_incomplete_devices(document):
    agent = Agent(error=agent_exception.AgentUnreachable(
        host="h", method="discover", attempts=1, reason="down"))
    bmc = _addressless(document)
    same, report = handle_discovery.fill_handles(bmc, agent)
    assert same is bmc
    assert sorted(report["incomplete"]) == sorted(
        d["id"] for d in bmc["devices"])
    assert report["kept"] == [f"{d['id']}/{r['id']}" for d in bmc["devices"]
                              for r in d["regions"]]
