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

"""Every operation doc/source/install/nova.rst allows on a server with
accelerators, done by an unchanged Nova 34.

One :class:`~tests.fixtures.nova.NovaCloud` serves the module (two hosts,
the fake virt driver, one FPGA of two regions per host, functions ``nlb0``
and ``nlb3``). Host A has a region programmed with ``nlb0`` by the
operator, host B starts plain; both nova-computes run with
``shelved_offload_time = -1`` (a shelved server stays on its host until it
is offloaded). Evacuate kills the nova-compute of the server's host and
forces its service down, then starts it again. After each operation the
tests check the server's ARQs, their attach handles, the regions' traits in
Placement and the server's allocations; the ``servers`` fixture deletes
what a test booted and checks that no ARQ, allocation, region usage or
Glance image is left.

Evacuate and unshelve make nova-conductor look the profile up again, and
that lookup does not say which hosts Nova leaves out: cyborg_lite counts it
without routing it, so a move is not confined to the regions of the host it
leaves (doc/source/install/nova.rst, "Operations on a server with
accelerators"). :func:`test_evacuate_of_a_routed_boot` and
:func:`test_unshelve_on_another_host` move servers whose boot was routed.
"""

import contextlib
import datetime
import os
import signal

import pytest
import requests

from accel_common import inventory
from tests.fixtures import nova as nova_fixtures

# NOTE(tests): one xdist worker runs the whole module (tools/run-tests
# passes --dist loadgroup), so its cloud starts once.
pytestmark = [pytest.mark.mariadb, pytest.mark.rabbitmq,
              pytest.mark.xdist_group("nova-operations")]

FPGA = {"resources:FPGA": "1",
        "trait:" + nova_fixtures.FPGA_TRAIT: "required"}
USER = nova_fixtures.END_USER


def _function_trait(function):
    return f"CUSTOM_FPGA_FUNCTION_ID_INTEL_{function.upper()}"


@pytest.fixture(scope="module")
def flavors(nova_cloud):
    """function -> flavor id of a region running it (routed), and
    ``nlb0-pool``: nlb0 with its function trait required (a function
    pool's profile: counted, not routed)."""
    made = {function: nova_cloud.flavor(
        function, [dict(FPGA, **{"accel:function_id": function})])
        for function in ("nlb0", "nlb3")}
    made["nlb0-pool"] = nova_cloud.flavor("nlb0-pool", [dict(FPGA, **{
        "accel:function_id": "nlb0",
        "trait:" + _function_trait("nlb0"): "required"})])
    return made


@pytest.fixture(scope="module")
def hosts(nova_cloud):
    """``{"a": host A, "b": host B, "programmed": region of A running
    nlb0}``; both nova-computes restarted with ``shelved_offload_time =
    -1``."""
    cloud = nova_cloud
    host_a, host_b = cloud.host_names
    region = cloud.hosts[host_a]["fpga_rps"][0]
    _program(cloud, region, "nlb0")
    # NOTE(tests): FakeDriver names its node with a uuid new in every
    # process (nova/virt/fake.py get_nodenames_by_uuid), so a restarted
    # nova-compute would not find its own compute node; Nova's
    # FakeDriverWithoutFakeNodes keeps the node identity, in state_path's
    # compute_id, as a real single-node driver does.
    (cloud.workdir / "nova" / "nova-ops.conf").write_text(
        "[DEFAULT]\nshelved_offload_time = -1\n"
        "compute_driver = fake.FakeDriverWithoutFakeNodes\n")
    for host in cloud.host_names:
        (cloud.workdir / "nova" / f"state-{host}" / "compute_id").write_text(
            cloud.hosts[host]["compute_rp"])
        _kill_compute(cloud, host)
        _start_compute(cloud, host)
    return {"a": host_a, "b": host_b, "programmed": region}


def _program(cloud, region, function):
    """The operator loads ``function`` into ``region``."""
    (deployable,) = cloud.cyborg_api(
        "GET", f"/deployables?rp_uuid={region}").json()["deployables"]
    cloud.cyborg_api(
        "PATCH", f"/deployables/{deployable['uuid']}/program",
        [{"path": "/program", "op": "replace",
          "value": [{"function_id": function}]}])
    cloud.wait_until(
        lambda: _function_trait(function) in cloud.traits(region), 60,
        f"{function} loaded in {region}")


def _compute_name(cloud, host):
    return f"nova-compute-{cloud.host_names.index(host) + 1}"


def _kill_compute(cloud, host):
    """SIGKILL the nova-compute of ``host`` (a host that fails)."""
    # NOTE(tests): NovaCloud offers no restart of one service; its process
    # list is what stop() cleans up, so the new process goes there too.
    name = _compute_name(cloud, host)
    for entry in [e for e in cloud._procs if e[0] == name]:
        os.killpg(entry[1].pid, signal.SIGKILL)
        entry[1].wait(30)
        cloud._procs.remove(entry)


def _start_compute(cloud, host):
    """Start ``host``'s nova-compute again (with ``nova-ops.conf``) and
    wait for its first report after the start."""
    name = _compute_name(cloud, host)
    d = cloud.workdir / "nova"
    # NOTE(tests): a second later than now, rounded down: the database
    # keeps whole seconds, and may round the killed process's last report
    # up.
    started = datetime.datetime.now(datetime.timezone.utc).replace(
        tzinfo=None, microsecond=0) + datetime.timedelta(seconds=1)
    cloud._spawn(name, [cloud.nova_bin / "nova-compute", "--config-file",
                        d / f"nova-cpu-{host}.conf", "--config-file",
                        d / "nova-ops.conf", "--log-file", cloud.logs[name]],
                 d)

    def reported():
        updated = _service(cloud, host)["updated_at"]
        return updated and datetime.datetime.fromisoformat(
            updated) > started
    cloud.wait_until(reported, 180, f"{name} to report after its restart")


def _service(cloud, host):
    (service,) = cloud.nova(
        "GET", f"/os-services?binary=nova-compute&host={host}",
        expect=(200,)).json()["services"]
    return service


def _force_down(cloud, host, down):
    cloud.nova("PUT", f"/os-services/{_service(cloud, host)['id']}",
               {"forced_down": down}, expect=(200,))


def _glance(cloud, method, path):
    return requests.request(
        method, cloud.urls["image"] + path, timeout=60,
        headers={"X-Auth-Token": cloud.keystone.token("admin")})


def _images(cloud):
    return {i["id"]: i["name"] for i in _glance(
        cloud, "GET", "/v2/images").json()["images"]}


@pytest.fixture
def servers(nova_cloud):
    """Boots recorded by the test, deleted after it; then no ARQ,
    allocation, region usage or image beyond the cloud's own may be left."""
    created = []
    images = set(_images(nova_cloud))
    yield created
    cloud = nova_cloud
    for server_id in created:
        cloud.delete_server(server_id)
    left = {s: cloud.allocations(s) for s in created}
    assert not any(left.values()), f"allocations left: {left}"
    assert cloud.arqs() == []
    usage = {rp: cloud.usages(rp) for rp in cloud.fpga_rps}
    assert not any(u.get("FPGA") for u in usage.values()), usage
    assert set(_images(cloud)) == images


def _boot(cloud, servers, flavor, name, **kwargs):
    server_id = cloud.create_server(flavor, name, **kwargs)
    servers.append(server_id)
    server = cloud.wait_server(server_id)
    assert server["status"] == "ACTIVE", server.get("fault")
    return server


def _action(cloud, server, body, user="admin", expect=(202,)):
    return cloud.nova("POST", f"/servers/{server['id']}/action", body,
                      user=user, expect=expect)


def _settled(cloud, server, status, host=None):
    """The server once it is ``status`` with no task running (and on
    ``host`` when given)."""
    def done():
        now = cloud.nova("GET", f"/servers/{server['id']}",
                         expect=(200,)).json()["server"]
        if now["status"] == "ERROR":
            raise AssertionError(f"server went ERROR: {now.get('fault')}")
        return (now if now["status"] == status
                and now["OS-EXT-STS:task_state"] is None
                and host in (None, now["OS-EXT-SRV-ATTR:host"]) else None)
    return cloud.wait_until(done, cloud.arq_binding_timeout + 60,
                            f"server {server['name']} to be {status}", 0.2)


def _accelerators(cloud, server, function):
    """What the server holds, checked: its one ARQ Bound to it on a region
    of its host, with an attach handle, the region running ``function`` and
    allocated to the server. Returns ``(arq, allocations)``."""
    arqs = cloud.arqs(server["id"])
    assert len(arqs) == 1, arqs
    (arq,) = arqs
    host = server["OS-EXT-SRV-ATTR:host"]
    assert arq["state"] == "Bound", arq
    assert arq["instance_uuid"] == server["id"]
    assert arq["hostname"] == host
    region = arq["device_rp_uuid"]
    assert region in cloud.hosts[host]["fpga_rps"], (arq, host)
    assert _region_state(cloud, region) == "ready"
    assert arq["attach_handle_type"] and arq["attach_handle_info"], arq
    traits = cloud.traits(region)
    assert _function_trait(function) in traits, traits
    assert inventory.lock_trait(function) in traits, traits
    allocations = cloud.allocations(server["id"])
    assert allocations[region]["resources"] == {"FPGA": 1}, allocations
    assert cloud.hosts[host]["compute_rp"] in allocations, allocations
    return arq, allocations


def _region_state(cloud, region):
    """The state of the region (its deployable) of provider ``region``."""
    (deployable,) = cloud._call(
        "accelerator", "GET", f"/deployables?rp_uuid={region}", "admin",
        None, (200,), {"OpenStack-API-Version": "accelerator 2.4"},
    ).json()["deployables"]
    return deployable["state"]


def _left(cloud, region, function):
    """``region`` no longer serves the server that left it: no handle in
    use, not locked to ``function``, ready for anything."""
    cloud.wait_until(
        lambda: inventory.lock_trait(function) not in cloud.traits(region),
        60, f"{region} to lose its lock trait")
    assert _region_state(cloud, region) == "ready"


def _unchanged(cloud, server, function, before):
    """The server keeps the very ARQ, handle, region and allocations."""
    arq, allocations = _accelerators(cloud, server, function)
    assert arq == before[0]
    assert allocations == before[1]


def test_in_place_operations_keep_the_accelerator(nova_cloud, flavors, hosts,
                                                  servers):
    """Cold and live migration and suspend are refused; reboot (soft,
    hard), stop/start, pause/unpause, lock/unlock, snapshot and rebuild
    are done, and Nova keeps the bound ARQ (reboot, hard reboot and
    rebuild read it again for the guest), so the server keeps its handle,
    region and allocations through all of them."""
    cloud = nova_cloud
    server = _boot(cloud, servers, flavors["nlb0"], "vm-inplace")
    before = _accelerators(cloud, server, "nlb0")
    assert before[0]["device_rp_uuid"] == hosts["programmed"]

    for body in ({"migrate": None}, {"suspend": None},
                 {"os-migrateLive": {"host": None,
                                     "block_migration": "auto"}}):
        rsp = _action(cloud, server, body, expect=(400,))
        assert "accelerators" in rsp.text, rsp.text
    _unchanged(cloud, _settled(cloud, server, "ACTIVE"), "nlb0", before)

    for body, status in (({"reboot": {"type": "SOFT"}}, "ACTIVE"),
                         ({"reboot": {"type": "HARD"}}, "ACTIVE"),
                         ({"os-stop": None}, "SHUTOFF"),
                         ({"os-start": None}, "ACTIVE"),
                         ({"pause": None}, "PAUSED"),
                         ({"unpause": None}, "ACTIVE")):
        _action(cloud, server, body, user=USER)
        _unchanged(cloud, _settled(cloud, server, status), "nlb0", before)

    _action(cloud, server, {"lock": {}}, user=USER)
    rsp = _action(cloud, server, {"os-stop": None}, user=USER,
                  expect=(409,))
    assert "locked" in rsp.text, rsp.text
    _action(cloud, server, {"unlock": None}, user=USER)
    _unchanged(cloud, _settled(cloud, server, "ACTIVE"), "nlb0", before)

    image = _action(cloud, server, {"createImage": {"name": "vm-snap"}},
                    user=USER).json()["image_id"]
    try:
        _unchanged(cloud, _settled(cloud, server, "ACTIVE"), "nlb0", before)
        assert _glance(cloud, "GET", f"/v2/images/{image}").status_code == 200
    finally:
        _glance(cloud, "DELETE", f"/v2/images/{image}")

    _action(cloud, server, {"rebuild": {"imageRef": cloud.image_id}},
            user=USER)
    _unchanged(cloud, _settled(cloud, server, "ACTIVE"), "nlb0", before)


@contextlib.contextmanager
def _host_down(cloud, host):
    """``host`` fails: its nova-compute is killed and its service forced
    down; afterwards it starts again (removing what Nova left there of the
    servers evacuated from it) and the service is no longer forced down."""
    _kill_compute(cloud, host)
    try:
        _force_down(cloud, host, True)
        yield
    finally:
        _start_compute(cloud, host)
        _force_down(cloud, host, False)


def _other(cloud, host):
    return next(h for h in cloud.host_names if h != host)


def test_evacuate_binds_new_arqs_on_the_other_host(nova_cloud, flavors,
                                                   hosts, servers):
    """Host X fails: nova-conductor deletes the ARQs, creates new ones and
    binds them on host Y; X's allocations stay until X's nova-compute is
    back, which removes them. The profile requires the function's trait (a
    function pool: counted, not routed) and the operator loaded nlb0 on a
    region of Y too."""
    cloud = nova_cloud
    server = _boot(cloud, servers, flavors["nlb0-pool"], "vm-evacuate")
    host_x = server["OS-EXT-SRV-ATTR:host"]
    host_y = _other(cloud, host_x)
    old, _ = _accelerators(cloud, server, "nlb0")
    pool_region = next(rp for rp in cloud.hosts[host_y]["fpga_rps"]
                       if not cloud.usages(rp).get("FPGA"))
    _program(cloud, pool_region, "nlb0")
    tree_x = {cloud.hosts[host_x]["compute_rp"], old["device_rp_uuid"]}

    with _host_down(cloud, host_x):
        _action(cloud, server, {"evacuate": {}}, expect=(200,))
        # NOTE(tests): from microversion 2.95 an evacuated server is left
        # stopped on its new host; Nova stops it before it records the new
        # host (ResourceTracker.finish_evacuation).
        after = _settled(cloud, server, "SHUTOFF", host_y)
        new, allocations = _accelerators(cloud, after, "nlb0")
        assert new["uuid"] != old["uuid"]
        assert new["device_rp_uuid"] == pool_region
        assert cloud.arqs(server["id"]) == [new]
        assert tree_x <= set(allocations), allocations

        _action(cloud, after, {"os-start": None})
        assert _accelerators(cloud, _settled(cloud, after, "ACTIVE"),
                             "nlb0")[0] == new
    cloud.wait_until(lambda: not tree_x & set(cloud.allocations(
        server["id"])), 120, "host X to remove the evacuated allocations")
    assert cloud.usages(old["device_rp_uuid"]).get("FPGA") == 0
    assert _accelerators(cloud, cloud.wait_server(server["id"]),
                         "nlb0")[0] == new


def test_evacuate_of_a_routed_boot(nova_cloud, flavors, hosts, servers):
    """Host X fails while the only region running the server's function
    (its boot was routed there) is on X: nova-conductor's lookup is
    counted, not routed, so Nova's scheduler takes a region of host Y,
    which is programmed with nlb3 at the bind; X's region is left ready
    and unlocked once the old ARQ is deleted, and its allocation goes when
    X is back."""
    cloud = nova_cloud
    server = _boot(cloud, servers, flavors["nlb3"], "vm-evacuate-routed")
    host_x = server["OS-EXT-SRV-ATTR:host"]
    host_y = _other(cloud, host_x)
    old, _ = _accelerators(cloud, server, "nlb3")
    tree_x = {cloud.hosts[host_x]["compute_rp"], old["device_rp_uuid"]}

    with _host_down(cloud, host_x):
        _action(cloud, server, {"evacuate": {}}, expect=(200,))
        after = _settled(cloud, server, "SHUTOFF", host_y)
        new, allocations = _accelerators(cloud, after, "nlb3")
        assert new["uuid"] != old["uuid"]
        assert new["device_rp_uuid"] in cloud.hosts[host_y]["fpga_rps"]
        assert cloud.arqs(server["id"]) == [new]
        assert tree_x <= set(allocations), allocations
        _left(cloud, old["device_rp_uuid"], "nlb3")
    cloud.wait_until(lambda: not tree_x & set(cloud.allocations(
        server["id"])), 120, "host X to remove the evacuated allocations")
    assert cloud.usages(old["device_rp_uuid"]).get("FPGA") == 0
    _action(cloud, after, {"os-start": None})
    assert _accelerators(cloud, _settled(cloud, after, "ACTIVE"),
                         "nlb3")[0] == new


def _shelve_and_offload(cloud, server, function):
    """Shelve keeps the ARQ; shelve offload deletes it and frees the
    region and the allocations."""
    before = _accelerators(cloud, server, function)
    _action(cloud, server, {"shelve": None})
    _unchanged(cloud, _settled(cloud, server, "SHELVED"), function, before)
    _action(cloud, server, {"shelveOffload": None})
    _settled(cloud, server, "SHELVED_OFFLOADED")
    assert cloud.arqs(server["id"]) == []
    assert cloud.allocations(server["id"]) == {}
    assert cloud.usages(before[0]["device_rp_uuid"]).get("FPGA") == 0
    return before[0]


def test_shelve_offload_and_unshelve(nova_cloud, flavors, hosts, servers):
    """After the offload, unshelve routes the profile again and binds a new
    ARQ on a region running nlb3."""
    cloud = nova_cloud
    server = _boot(cloud, servers, flavors["nlb3"], "vm-shelve")
    old = _shelve_and_offload(cloud, server, "nlb3")

    _action(cloud, server, {"unshelve": None})
    arq, _ = _accelerators(cloud, _settled(cloud, server, "ACTIVE"), "nlb3")
    assert arq["uuid"] != old["uuid"]


def test_unshelve_on_another_host(nova_cloud, flavors, hosts, servers):
    """Unshelve to the other host (``host``, microversion 2.91) after the
    offload freed the region that ran nlb3: nova-conductor's lookup is
    counted, not routed, so a region of that host is bound (programmed
    with nlb3 if it ran something else); the old region stays ready and
    unlocked."""
    cloud = nova_cloud
    server = _boot(cloud, servers, flavors["nlb3"], "vm-unshelve-y")
    host_x = server["OS-EXT-SRV-ATTR:host"]
    host_y = _other(cloud, host_x)
    old = _shelve_and_offload(cloud, server, "nlb3")
    _left(cloud, old["device_rp_uuid"], "nlb3")

    _action(cloud, server, {"unshelve": {"host": host_y}})
    after = _settled(cloud, server, "ACTIVE", host_y)
    arq, allocations = _accelerators(cloud, after, "nlb3")
    assert arq["uuid"] != old["uuid"]
    assert arq["device_rp_uuid"] in cloud.hosts[host_y]["fpga_rps"]
    tree_x = {cloud.hosts[host_x]["compute_rp"],
              *cloud.hosts[host_x]["fpga_rps"]}
    assert not tree_x & set(allocations), allocations
    assert cloud.usages(old["device_rp_uuid"]).get("FPGA") == 0
