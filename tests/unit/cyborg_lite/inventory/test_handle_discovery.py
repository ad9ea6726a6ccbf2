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
