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

"""An unchanged Nova 34 and Neutron 29 boot servers with SmartNIC ports.

One :class:`~tests.fixtures.nova.NovaCloud` with ``neutron=True`` serves
the module: its two hosts' BMCs list a SmartNIC PF, their agents' inventory
the PF's VFs on ``physnet1``; Neutron runs ML2 ``sriovnicswitch`` with the
``port_device_profile`` extension and one real SR-IOV agent per host. A
user creates a port with a device profile and ``accelerator-direct``, and
boots a server on it, as doc/source/install/neutron.rst shows.
"""

import pytest

from tests.fixtures import nova as nova_fixtures

pytestmark = [pytest.mark.mariadb, pytest.mark.rabbitmq,
              pytest.mark.xdist_group("real-neutron")]

USER = nova_fixtures.END_USER
NIC = {"resources:CUSTOM_NIC": "1"}
#: Nova's answer to an operation it does not do for such ports.
REFUSED = "Feature not supported with Ports that have accelerators."


@pytest.fixture(scope="module")
def cloud(tmp_path_factory):
    """The cloud of the module (see the module doc)."""
    with nova_fixtures.NovaCloud(tmp_path_factory.mktemp("neutron-cloud"),
                                 neutron=True) as made:
        yield made


@pytest.fixture(scope="module")
def network(cloud):
    """A shared flat network on the VFs' physnet with a subnet (no DHCP)."""
    net = cloud.network("POST", "/networks", {"network": {
        "name": "smartnic", "shared": True,
        "provider:network_type": "flat",
        "provider:physical_network": nova_fixtures.PHYSNET}},
        expect=(201,)).json()["network"]
    cloud.network("POST", "/subnets", {"subnet": {
        "network_id": net["id"], "ip_version": 4, "cidr": "10.42.0.0/24",
        "enable_dhcp": False}}, expect=(201,))
    return net["id"]


@pytest.fixture(scope="module")
def flavor(cloud):
    """A flavor without accelerators: the port brings its own."""
    return cloud.flavor("plain")


@pytest.fixture(scope="module")
def profiles(cloud):
    """name -> device profile name: ``vf`` (any NIC region), ``documented``
    (install/neutron.rst's, by trait), ``nowhere`` (a physnet no host
    has)."""
    cloud.placement("PUT", "/traits/CUSTOM_PHYSNET2", expect=(201, 204))
    made = {"vf": [NIC],
            "documented": [dict(NIC, **{"trait:CUSTOM_VF": "required",
                                        "trait:CUSTOM_PHYSNET1":
                                            "required"})],
            "nowhere": [dict(NIC, **{"trait:CUSTOM_PHYSNET2": "required"})]}
    for name, groups in made.items():
        cloud.cyborg_api("POST", "/device_profiles",
                         [{"name": f"nic-{name}", "groups": groups}],
                         expect=(201,))
    return {name: f"nic-{name}" for name in made}


def _port(cloud, network, profile, user=USER):
    return cloud.network("POST", "/ports", {"port": {
        "network_id": network, "binding:vnic_type": "accelerator-direct",
        "device_profile": profile}}, user=user,
        expect=(201,)).json()["port"]["id"]


def _boot(cloud, flavor, port, name, user=USER):
    return cloud.nova("POST", "/servers", {"server": {
        "name": name, "imageRef": cloud.image_id, "flavorRef": flavor,
        "networks": [{"port": port}]}}, user=user,
        expect=(202,)).json()["server"]["id"]


def _nic_rps(cloud):
    return [rp for info in cloud.hosts.values() for rp in info["nic_rps"]]


@pytest.fixture
def clean(cloud):
    """Servers (``clean.append(id)``) deleted by admin after the test; then
    no ARQ, NIC allocation or handle in use may be left."""
    made = []
    yield made
    for server in made:
        cloud.nova("DELETE", f"/servers/{server}", expect=(204, 404))
    for server in made:
        cloud.wait_until(lambda s=server: cloud.nova(
            "GET", f"/servers/{s}").status_code == 404, 120,
            f"server {server} to be deleted")
    cloud.wait_until(lambda: not cloud.arqs(), 90, "no ARQ left")
    assert not any(cloud.usages(rp).get("CUSTOM_NIC")
                   for rp in _nic_rps(cloud))
    assert cloud.cyborg.handles_in_use() == []


def _assert_bound(cloud, server_id, port_id):
    server = cloud.nova("GET", f"/servers/{server_id}",
                        expect=(200,)).json()["server"]
    host = server["OS-EXT-SRV-ATTR:host"]
    arqs = cloud.arqs(server_id)
    assert [a["state"] for a in arqs] == ["Bound"], arqs
    arq = arqs[0]
    assert arq["device_rp_uuid"] in cloud.hosts[host]["nic_rps"]
    assert arq["hostname"] == host
    assert cloud.allocations(server_id)[arq["device_rp_uuid"]][
        "resources"] == {"CUSTOM_NIC": 1}
    info = arq["attach_handle_info"]
    slot = (f"{info['domain']}:{info['bus']}:{info['device']}."
            f"{info['function']}")
    port = cloud.network("GET", f"/ports/{port_id}",
                         expect=(200,)).json()["port"]
    assert port["binding:vif_type"] == "hw_veb", port
    assert port["binding:host_id"] == host
    assert port["device_id"] == server_id
    assert port["binding:profile"]["pci_slot"] == slot
    assert (port["binding:profile"]["physical_network"]
            == nova_fixtures.PHYSNET)
    assert port["binding:profile"]["arq_uuid"] == arq["uuid"]
    return arq


def test_port_boot_binds_vf_and_owner_delete_frees_it(cloud, network,
                                                      flavor, profiles):
    port = _port(cloud, network, profiles["vf"])
    server = _boot(cloud, flavor, port, "nic-owner")
    assert cloud.wait_server(server)["status"] == "ACTIVE"
    arq = _assert_bound(cloud, server, port)
    slot = arq["attach_handle_info"]
    assert len(cloud.cyborg.handles_in_use()) == 1

    # NOTE(tests): the owner, not an admin: Nova then reads the port's
    # binding:profile with the owner's token, which Neutron's policy
    # strips, so Nova never deletes the ARQ; cyborg_lite reclaims it.
    cloud.nova("DELETE", f"/servers/{server}", user=USER, expect=(204,))
    cloud.wait_until(lambda: cloud.nova(
        "GET", f"/servers/{server}").status_code == 404, 120,
        "the server to be deleted")
    cloud.wait_until(lambda: not cloud.arqs(server), 90,
                     "the server's ARQ to be deleted or reclaimed")
    assert cloud.cyborg.handles_in_use() == [], slot
    assert cloud.allocations(server) == {}
    assert not cloud.usages(arq["device_rp_uuid"]).get("CUSTOM_NIC")
    unbound = cloud.network("GET", f"/ports/{port}",
                            expect=(200,)).json()["port"]
    assert unbound["binding:vif_type"] == "unbound"
    assert unbound["device_id"] == ""
    assert "pci_slot" not in unbound["binding:profile"]


def test_documented_profile_by_traits_boots(cloud, network, flavor,
                                            profiles, clean):
    # NOTE(tests): needs the region providers' CUSTOM_VF and
    # CUSTOM_PHYSNET<N> traits (accel_common.placement.tree).
    port = _port(cloud, network, profiles["documented"])
    server = _boot(cloud, flavor, port, "nic-documented")
    clean.append(server)
    assert cloud.wait_server(server)["status"] == "ACTIVE"
    _assert_bound(cloud, server, port)


def test_profile_on_a_physnet_no_host_has_is_no_valid_host(
        cloud, network, flavor, profiles, clean):
    port = _port(cloud, network, profiles["nowhere"])
    server = _boot(cloud, flavor, port, "nic-nowhere")
    clean.append(server)
    found = cloud.wait_server(server)
    assert found["status"] == "ERROR"
    assert "No valid host" in found["fault"]["message"], found["fault"]
    bound = cloud.network("GET", f"/ports/{port}",
                          expect=(200,)).json()["port"]
    assert bound["binding:host_id"] == ""
    assert cloud.arqs(server) == []


def test_operations_nova_refuses_for_accelerator_ports(cloud, network, flavor,
                                                       profiles, clean):
    port = _port(cloud, network, profiles["vf"])
    server = _boot(cloud, flavor, port, "nic-refused")
    clean.append(server)
    assert cloud.wait_server(server)["status"] == "ACTIVE"
    other = cloud.flavor("plain-bigger")
    actions = {
        "resize": {"resize": {"flavorRef": other}},
        "migrate": {"migrate": None},
        "live-migrate": {"os-migrateLive": {"host": None,
                                            "block_migration": "auto"}},
        "shelve": {"shelve": None},
        "suspend": {"suspend": None},
        "evacuate": {"evacuate": {}},
    }
    answers = {}
    for name, body in actions.items():
        rsp = cloud.nova("POST", f"/servers/{server}/action", body)
        answers[name] = (rsp.status_code, rsp.text)
    refused = {name: code for name, (code, text) in answers.items()
               if code == 400 and REFUSED in text}
    assert refused.keys() == actions.keys(), answers
    second = _port(cloud, network, profiles["vf"])
    rsp = cloud.nova("POST", f"/servers/{server}/os-interface", {
        "interfaceAttachment": {"port_id": second}}, user=USER)
    assert rsp.status_code == 400 and REFUSED in rsp.text, rsp.text
    rsp = cloud.nova("DELETE", f"/servers/{server}/os-interface/{port}",
                     user=USER)
    assert rsp.status_code == 400 and REFUSED in rsp.text, rsp.text
    _assert_bound(cloud, server, port)
