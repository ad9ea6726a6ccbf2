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

"""OpenStack's cyborg-tempest-plugin judges cyborg_lite as Cyborg's gate
judges Cyborg.

Its API tests run unchanged (``tempest run``, dynamic credentials) against
cyborg_lite behind the session Keystone, whose catalog names cyborg_lite as
the ``accelerator`` service, with the inventory of Cyborg's ``fake``
driver, once with the plugin's ``[cyborg_policy] enforce_new_defaults``
(reader, member and manager personas) and once without (the administrator
for all). Every test passes or is skipped by the plugin itself, except the
ones of ``cyborg_tempest_exclude.txt``: each asserts real Cyborg's answer
where the API reference documents a different one, and says so.

The plugin's scenario tests boot servers through Nova, so they do not
run here, where only Keystone and cyborg_lite are:

- ``TestServerBasicOps.test_server_basic_ops`` and
  ``TestARQServiceTokenOps.test_delete_bound_arq_by_instance_uuid`` run in
  :mod:`tests.interop.test_cyborg_tempest_scenario`, against the real Nova
  (fake virt driver) and real Neutron of :mod:`tests.fixtures.nova` with
  the fake driver's device and its ``CUSTOM_FAKE_DEVICE`` trait.
- ``TestPCIDriverLifecycle`` (10 tests) runs nowhere: it logs into the
  guest over SSH (floating IP, keypair) after each life-cycle step
  (reboots, pause, snapshot, backup, shelve, rebuild, ...) to find the
  device's vendor and product ids with ``lspci``: a guest that runs and a
  real PCI device.
"""

from concurrent import futures
import configparser
import pathlib
import re

import pytest

from tests.fixtures import tempest
from tests.fixtures.cyborg_server import CyborgServer

EXCLUDE = pathlib.Path(__file__).with_name("cyborg_tempest_exclude.txt")
API_REFERENCE = (pathlib.Path(__file__).resolve().parents[2] / "doc" /
                 "source" / "reference" / "api.rst")
API_TESTS = r"^cyborg_tempest_plugin\.tests\.api\."


def _excluded():
    return [line.split("#")[0].strip() for line in EXCLUDE.read_text()
            .splitlines() if line.split("#")[0].strip()]


#: the plugin's ``[cyborg_policy] enforce_new_defaults`` -> the catalog
#: region of the cyborg_lite it judges. Each mode has a server of its own:
#: both runs create profiles of the same names.
REGIONS = {True: "RegionTempestNew", False: "RegionTempestLegacy"}


def _serve(keystone, workdir):
    authtoken = configparser.ConfigParser(interpolation=None)
    authtoken.read_string(keystone.authtoken_config())
    server = CyborgServer(
        workdir, inventories=[tempest.fake_driver_inventory()], options={
            "DEFAULT": {"auth_strategy": "keystone"},
            "keystone_authtoken": dict(authtoken["keystone_authtoken"])})
    server.prepare()
    return server.start()


@pytest.fixture(scope="module")
def accelerators(keystone, tmp_path_factory):
    """``{enforce_new_defaults: server}``: cyborg_lite behind the session
    Keystone, in its catalog as the ``accelerator`` service of the mode's
    region (beside Keystone itself), with the fake driver's inventory."""
    servers = {}
    with futures.ThreadPoolExecutor(len(REGIONS)) as pool:
        started = {mode: pool.submit(
            _serve, keystone, tmp_path_factory.mktemp("cyborg"))
            for mode in REGIONS}
    try:
        for mode, future in started.items():
            servers[mode] = future.result()
        for mode, region in REGIONS.items():
            keystone.add_endpoint("identity", "keystone", keystone.url,
                                  region)
            keystone.add_endpoint("accelerator", "cyborg",
                                  servers[mode].url + "/v2", region)
        yield servers
    finally:
        for future in started.values():
            if future.done() and not future.exception():
                future.result().stop()


@pytest.fixture(scope="module")
def runs(accelerators, keystone, tmp_path_factory):
    """The API tests in both policy modes of the plugin, run at once:
    ``{enforce_new_defaults: Results}``."""
    with futures.ThreadPoolExecutor(len(REGIONS)) as pool:
        results = pool.map(
            lambda mode: tempest.run(
                tmp_path_factory.mktemp("tempest"), keystone, API_TESTS,
                exclude_list=EXCLUDE, enforce_new_defaults=mode,
                region=REGIONS[mode]),
            REGIONS)
        results = dict(zip(REGIONS, results))
    for mode, result in results.items():
        print(f"tempest run, enforce_new_defaults={mode}: "
              f"{result.counts()} in {result.seconds:.0f} s")
    return results


#: what passes in each mode: the 42 API tests less the 3 excluded, less
#: the 9 SRBAC tests the plugin skips without its new defaults.
PASSING = {True: 39, False: 30}


@pytest.mark.parametrize("enforce_new_defaults", [True, False],
                         ids=["new-defaults", "legacy-personas"])
def test_cyborg_tempest_plugin_api_tests_pass(accelerators, runs,
                                              enforce_new_defaults):
    results = runs[enforce_new_defaults]
    counts = results.counts()
    assert results.tests, f"tempest ran nothing:\n{results.output}"
    assert not results.named("fail"), (
        f"{counts} in {results.seconds:.0f} s\n{results.failures()}\n\n"
        f"cyborg_lite's log:\n{accelerators[enforce_new_defaults].log()}")
    # Skipped only by the plugin itself (its SRBAC classes without the new
    # defaults), nothing excluded ran, and no class went missing (a class
    # whose setup fails reports none of its tests).
    skipped = results.named("skip")
    assert all(".test_srbac." in name for name in skipped), skipped
    passed = results.named("success")
    assert not [name for name in passed for regex in _excluded()
                if re.search(regex, name)]
    assert len(passed) == PASSING[enforce_new_defaults], (
        counts, passed, results.output)


def test_every_exclusion_is_a_departure_the_api_reference_lists():
    reference = API_REFERENCE.read_text()
    for line in EXCLUDE.read_text().splitlines():
        regex, _, reason = line.partition("#")
        if not regex.strip():
            continue
        assert reason.strip(), f"no reason given for {regex.strip()}"
        test = regex.strip().replace("\\", "").rsplit(".", 1)[-1]
        assert f"{test}``" in reference, (
            f"{regex.strip()} is excluded but api.rst does not name it")
