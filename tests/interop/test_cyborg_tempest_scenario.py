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

"""cyborg-tempest-plugin's scenario tests that a fake-driver Nova can run.

``TestServerBasicOps.test_server_basic_ops`` and
``TestARQServiceTokenOps.test_delete_bound_arq_by_instance_uuid`` run
unchanged (``tempest run``, dynamic credentials) against a
:class:`~tests.fixtures.nova.NovaCloud` with a real Neutron 29: Keystone,
Placement, Glance, Nova 34 (``fake.FakeDriver``), Neutron, Ironic and
cyborg_lite. Its host reports what Cyborg's ``fake`` driver reports: the
BMC lists the ``FakeDevice`` FPGA (vendor and product ``0xabcd``), the
host agent finds its 16 PCI functions in-band, and the operator gives the
region's provider ``CUSTOM_FAKE_DEVICE``, the trait the plugin's device
profiles ask for. Neutron binds the ``normal`` ports of tempest's
servers with ML2 ``openvswitch`` (beside ``sriovnicswitch``), each host's
Open vSwitch agent only recorded. Both tests create a keypair, a security
group and a flavor with an ``accel:device_profile``, boot a server on a
shared network and delete it; the second also deletes the bound ARQs by
instance uuid, refused without a service token and done with one.
Afterwards no server, ARQ, device profile, handle in use or allocation is
left.

``TestPCIDriverLifecycle`` does not run: it logs into the guest over SSH
after each life-cycle step to find the device with ``lspci``, which needs
a guest that runs and a real PCI device.
"""

import configparser
import datetime
import json
import uuid

import pytest
import sqlalchemy as sa

from accel_tools.embedded import bmc as bmc_mod
from accel_tools.embedded import ironic as ironic_mod
from tests.fixtures import neutron as neutron_fixtures
from tests.fixtures import nova as nova_fixtures
from tests.fixtures import tempest

pytestmark = [pytest.mark.mariadb, pytest.mark.rabbitmq,
              pytest.mark.xdist_group("tempest-scenario")]

SCENARIO_TESTS = (r"^cyborg_tempest_plugin\.tests\.scenario\."
                  r"(test_accelerator_basic_ops\.TestServerBasicOps|"
                  r"test_arq_service_token_ops\.TestARQServiceTokenOps)\.")
#: the trait the plugin's scenario device profiles require; Cyborg's fake
#: driver reports it.
FAKE_TRAIT = "CUSTOM_FAKE_DEVICE"
#: the shared network tempest boots its servers on.
NETWORK = "tempest-shared"
#: the fake driver's device as the BMC lists it (one function, no
#: reconfiguration slots: one region).
_BMC_FAKE_DEVICE = {"id": "FakeDevice", "type": "FPGA",
                    "manufacturer": "0xABCD", "model": "miss model info",
                    "vendor_id": "0xabcd", "device_id": "0xabcd",
                    "pci_address": "0000:0c:00.0"}


class _NeutronWithOvs(neutron_fixtures.Neutron):
    """The Neutron of :mod:`tests.fixtures.neutron` whose ML2 also binds
    ``normal`` ports (ML2 ``openvswitch`` beside ``sriovnicswitch``), as
    tempest's servers have."""

    def _configure(self):
        super()._configure()
        ml2 = configparser.ConfigParser(interpolation=None)
        ml2.read(self.workdir / "ml2_conf.ini")
        ml2["ml2"]["mechanism_drivers"] = "sriovnicswitch,openvswitch"
        with open(self.workdir / "ml2_conf.ini", "w") as handle:
            ml2.write(handle)

    def add_ovs_agent(self, host):
        """Record an Open vSwitch agent of ``host`` that stays alive."""
        # NOTE(tests): no Open vSwitch runs here; ML2 binds a port on a
        # host whose agent of the driver's type is alive and maps the
        # network's physnet, and nothing else reads the agent. Its
        # heartbeat is in the future, so Neutron never finds it down.
        neutron_conf = configparser.ConfigParser(interpolation=None)
        neutron_conf.read(self.workdir / "neutron.conf")
        engine = sa.create_engine(neutron_conf["database"]["connection"])
        now = datetime.datetime.now(datetime.timezone.utc).replace(
            tzinfo=None, microsecond=0)
        try:
            with engine.begin() as conn:
                conn.execute(sa.text(
                    "INSERT INTO agents (id, agent_type, `binary`, topic, "
                    "host, admin_state_up, created_at, started_at, "
                    "heartbeat_timestamp, configurations, `load`) VALUES "
                    "(:id, 'Open vSwitch agent', 'neutron-openvswitch-agent',"
                    " 'N/A', :host, 1, :now, :now, :beat, :conf, 0)"), {
                    "id": str(uuid.uuid4()), "host": host, "now": now,
                    "beat": now.replace(year=now.year + 10),
                    "conf": json.dumps({
                        "bridge_mappings": {p: "br-phys" for p in
                                            self.physnets},
                        "tunnel_types": [], "integration_bridge": "br-int",
                        "datapath_type": "system"})})
        finally:
            engine.dispose()


class FakeDriverCloud(nova_fixtures.NovaCloud):
    """A :class:`~tests.fixtures.nova.NovaCloud` with a real Neutron whose
    hosts hold what Cyborg's fake driver reports (see the module doc)."""

    def __init__(self, workdir, hosts=1):
        super().__init__(workdir, hosts=hosts, neutron=True)

    def _ironic_start(self):
        self.bmc = bmc_mod.BmcEmulator(
            self._dir("bmc"), systems=len(self.host_names),
            devices={str(n): [_BMC_FAKE_DEVICE]
                     for n in range(1, len(self.host_names) + 1)}).start()
        self.ironic = ironic_mod.IronicServer(
            str(self._dir("ironic")), options={
                "placement": self._auth("ironic",
                                        region_name=nova_fixtures.REGION)})
        self.logs["ironic"] = self.ironic.log_file
        self.ironic.start(timeout=120)

    def _sim_inventory(self, example, host):
        return tempest.fake_driver_inventory(host)

    def _neutron(self):
        d = self._dir("neutron")
        port = int(self.urls["network"].rsplit(":", 1)[1])
        self.neutron = _NeutronWithOvs(
            d, port, self._authtoken("neutron"),
            physnets=(nova_fixtures.PHYSNET,))
        self.neutron.start()
        for host in self.host_names:
            self.neutron.add_agent(host)
            self.neutron.add_ovs_agent(host)
        self.logs.update(self.neutron.logs)


def _give_trait(cloud, rp):
    """What an operator does (``openstack resource provider trait set``):
    the region provider also gets :data:`FAKE_TRAIT`; the reporter keeps
    traits it does not own."""
    def put():
        current = cloud.placement("GET", f"/resource_providers/{rp}/traits"
                                  ).json()
        traits = sorted(set(current["traits"]) | {FAKE_TRAIT})
        return cloud.placement(
            "PUT", f"/resource_providers/{rp}/traits", {
                "resource_provider_generation":
                    current["resource_provider_generation"],
                "traits": traits}, expect=(200, 409)).status_code == 200
    cloud.wait_until(put, 60, f"{FAKE_TRAIT} on {rp}")


@pytest.fixture(scope="module")
def cloud(tmp_path_factory):
    """The cloud of the module, the region providers with the trait and
    the fake driver's 16 handles, and a shared flat network (no DHCP)."""
    with FakeDriverCloud(tmp_path_factory.mktemp("scenario-cloud")) as made:
        made.placement("PUT", f"/traits/{FAKE_TRAIT}", expect=(201, 204))
        for rp in made.fpga_rps:
            _give_trait(made, rp)
            made.wait_until(lambda rp=rp: made.placement(
                "GET", f"/resource_providers/{rp}/inventories").json()[
                "inventories"].get("FPGA", {}).get("total") == 16, 120,
                f"16 FPGA handles offered by {rp}")
        net = made.network("POST", "/networks", {"network": {
            "name": NETWORK, "shared": True,
            "provider:network_type": "flat",
            "provider:physical_network": nova_fixtures.PHYSNET}},
            expect=(201,)).json()["network"]
        made.network("POST", "/subnets", {"subnet": {
            "network_id": net["id"], "ip_version": 4,
            "cidr": "10.43.0.0/24", "enable_dhcp": False}}, expect=(201,))
        yield made


def test_scenario_tests_boot_with_an_accelerator_and_leave_nothing(
        cloud, tmp_path):
    flavor = cloud.flavor("tempest-base")
    results = tempest.run(tmp_path, cloud.keystone, SCENARIO_TESTS, options={
        "service_available": {"nova": "true", "neutron": "true",
                              "glance": "true"},
        "compute": {"image_ref": cloud.image_id, "flavor_ref": flavor,
                    "fixed_network_name": NETWORK, "build_timeout": 300},
        "network": {"project_networks_reachable": "false"},
        "validation": {"run_validation": "false"}})
    print(f"tempest run: {results.counts()} in {results.seconds:.0f} s")
    assert not results.named("fail"), (
        f"{results.counts()}\n{results.failures()}\n\n"
        f"cyborg_lite's log:\n{cloud.log_tail('cyborg-api', 80)}\n\n"
        f"nova-compute's log:\n{cloud.log_tail('nova-compute-1', 80)}")
    passed = [name.split("[")[0] for name in results.named("success")]
    assert passed == [
        "cyborg_tempest_plugin.tests.scenario.test_accelerator_basic_ops."
        "TestServerBasicOps.test_server_basic_ops",
        "cyborg_tempest_plugin.tests.scenario.test_arq_service_token_ops."
        "TestARQServiceTokenOps.test_delete_bound_arq_by_instance_uuid"], (
        results.counts(), results.output)

    # Nothing left: tempest deleted its servers and profiles; Nova and
    # cyborg_lite freed what those servers held.
    assert cloud.servers() == []
    cloud.wait_until(lambda: not cloud.arqs(), 90, "no ARQ left")
    assert cloud.cyborg_api("GET", "/device_profiles").json()[
        "device_profiles"] == []
    assert cloud.cyborg.handles_in_use() == []
    for rp in cloud.fpga_rps:
        assert not cloud.usages(rp).get("FPGA"), rp
    for info in cloud.hosts.values():
        assert not any(cloud.usages(info["compute_rp"]).values()), info
