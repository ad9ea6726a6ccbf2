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

"""``[pci] device_spec`` as Nova itself reads it: the same values, given to
Nova's own ``nova.pci.whitelist.Whitelist`` (in the Nova virtualenv), are
accepted or refused alike and match the same functions of the recorded
hosts as the ``pci`` driver's parser, so an operator's spec copied from
nova.conf means the same here.

NOTE(tests): left out on purpose: ``devname`` and a PF address matching
its VFs (Nova resolves both on the real /sys of the machine it runs on),
and unknown keys (Nova keeps them as free-form tags; the driver refuses
them so a misspelt ``physical_network`` is not silently lost).
"""

import json
import subprocess

import pytest

from cyborg_lite.agent.drivers import pci_spec
from tests.fixtures import nova as nova_fixture
from tests.unit.cyborg_lite.agent.drivers import pci_host

_NOVA = """
import json, sys
from nova import exception
from nova.pci import whitelist
request = json.load(sys.stdin)
answers = []
for value in request["specs"]:
    try:
        spec = whitelist.Whitelist([value]).specs[0]
    except exception.NovaException as exc:
        answers.append({"error": str(exc)})
        continue
    answers.append({"matches": [
        d["address"] for d in request["devices"] if spec.match(d)]})
print(json.dumps(answers))
"""

SPECS = [
    {"address": "*:18:02.*"},
    {"address": ":18:0a."},
    {"address": "0000:18:02.5", "physical_network": "physnet1"},
    {"address": {"domain": ".*", "bus": "18", "slot": "02",
                 "function": "[2-5]"}, "physical_network": "physnet1"},
    {"address": {"bus": "f[37]", "function": "[1-3]"}},
    {"vendor_id": "10de", "product_id": "1eb8"},
    {"vendor_id": "0x8086", "product_id": "37C9"},
    {"vendor_id": "8086", "product_id": "4943", "trusted": "true"},
    {"vendor_id": "15b3", "product_id": "1018", "remote_managed": "false"},
    {"vendor_id": "1002", "product_id": "6929", "address": "0000:82:00.0",
     "resource_class": "PGPU", "traits": "HW_GPU_API_VULKAN,my-gpu"},
    {"vendor_id": "10xe"},
    {"product_id": "10de0"},
    {"address": "0000:0a:00.8"},
    {"address": "0000:0a:20.0"},
    {"address": "1:0000:0a:00.0"},
    {"address": "0000:0a:00.0", "devname": "eth0"},
]


def _devices():
    """Every function of the recorded hosts, as Nova's matcher reads one
    (ids without ``0x``, no parent: see the module doc)."""
    devices = []
    for recording in (pci_host.T4, pci_host.CONNECTX5, pci_host.XXV710,
                      pci_host.C62X, pci_host.QAT_401XX):
        for bdf, function in pci_host.functions_of(recording).items():
            devices.append({"address": bdf, "vendor_id": function["vendor"],
                            "product_id": function["device"]})
    return devices


@pytest.fixture(scope="module")
def nova_answers():
    python = nova_fixture.venv() / "bin" / "python"
    request = {"specs": [json.dumps(s) for s in SPECS],
               "devices": _devices()}
    result = subprocess.run([str(python), "-c", _NOVA], input=json.dumps(
        request), capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def _ours(spec):
    specs, errors = pci_spec.parse_device_specs([json.dumps(spec)])
    if errors:
        return {"error": errors[0]}
    return {"matches": [
        d["address"] for d in _devices() if specs[0].match(
            d["address"], f"0x{d['vendor_id']}", f"0x{d['product_id']}")]}


@pytest.mark.parametrize("index", range(len(SPECS)),
                         ids=[json.dumps(s) for s in SPECS])
def test_device_spec_read_as_nova_reads_it(nova_answers, index):
    nova, ours = nova_answers[index], _ours(SPECS[index])

    assert ("error" in ours) == ("error" in nova), (nova, ours)
    assert ours.get("matches") == nova.get("matches")
