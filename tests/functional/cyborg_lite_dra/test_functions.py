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

"""The function a region runs reaches its ResourceSlice: cyborg_lite
programs the region on a bind and sets its function trait in a real
Placement, where the plugin (with ``[placement]`` set) reads it."""

from accel_common import inventory
from accel_common.placement import client as placement_client
from accel_common.placement import tree
from accel_tools.embedded import placement as embedded_placement
from ironic_accel.placement import reporter
from tests.fixtures import placement as placement_fixture
from tests.functional.cyborg_lite_dra import env

REGION0 = "fpga-0000-0f-00-0-r0"
REGION1 = "fpga-0000-0f-00-0-r1"


def _attributes(apiserver, node):
    found = [s for s in apiserver.slices.values()
             if s["spec"]["nodeName"] == node]
    return found and {d["name"]: d["attributes"]
                      for d in found[0]["spec"]["devices"]}


def test_the_function_trait_follows_programming(
        tmp_path, placement_server, kube_apiserver):
    server = env.CyborgLite(tmp_path / "cyborg")
    conn = placement_server.connection()
    plugin = None
    try:
        # As the Ironic conductor reports the node, and cyborg_lite's
        # programmer then keeps the region's function trait.
        embedded_placement.apply_client_conf(server.conf, "placement",
                                            placement_server.url)
        placement_fixture.create_compute_node(conn, name=server.host)
        reporter.report(placement_client.Client(conn), server.document)
        plugin = env.Plugin(tmp_path / "plugin", server, kube_apiserver, **{
            "placement.auth_type": "admin_token",
            "placement.endpoint": placement_server.url,
            "placement.token": "admin"}).start()
        attributes = env.wait(
            lambda: _attributes(kube_apiserver, plugin.node), "the slice")
        assert "functionTrait" not in attributes[REGION0]

        claim = env.allocate(kube_apiserver, plugin, REGION0,
                             server.profile("nlb3"))
        assert plugin.prepare([claim])[claim[1]][0] == ""

        trait = inventory.function_trait(server.device["vendor"], "nlb3")
        attributes = env.wait(
            lambda: (lambda a: "functionTrait" in a[REGION0] and a)(
                _attributes(kube_apiserver, plugin.node)),
            "the function trait")
        assert attributes[REGION0]["functionTrait"] == {"string": trait}
        assert "functionTrait" not in attributes[REGION1]
        assert all(p == [] for _, _, p in kube_apiserver.writes)
    finally:
        if plugin is not None:
            plugin.close()
        server.close()
        conn.close()


def test_a_device_placement_marks_gone_is_tainted_no_execute(
        tmp_path, placement_server, kube_apiserver):
    server = env.CyborgLite(tmp_path / "cyborg")
    conn = placement_server.connection()
    plugin = None
    try:
        placement_fixture.create_compute_node(conn, name=server.host)
        client = placement_client.Client(conn)
        reporter.report(client, server.document)
        plugin = env.Plugin(tmp_path / "plugin", server, kube_apiserver, **{
            "dra.device_taints": "true",
            "placement.auth_type": "admin_token",
            "placement.endpoint": placement_server.url,
            "placement.token": "admin"}).start()
        env.wait(lambda: _attributes(kube_apiserver, plugin.node),
                 "the slice")
        # As the reporter marks a region whose device vanished while in
        # use.
        generation, traits = client.traits(server.rps[1])
        client.ensure_traits([tree.RETIRED_TRAIT])
        client.set_traits(server.rps[1], generation,
                          sorted(set(traits) | {tree.RETIRED_TRAIT}))

        def tainted():
            (slice_,) = [s for s in kube_apiserver.slices.values()
                         if s["spec"]["nodeName"] == plugin.node]
            by_name = {d["name"]: d for d in slice_["spec"]["devices"]}
            return by_name[REGION1].get("taints") and by_name

        devices = env.wait(tainted, "the taint")
        assert devices[REGION1]["taints"] == [{
            "key": f"{env.DRIVER}/gone", "value": "gone",
            "effect": "NoExecute"}]
        assert devices[REGION1]["attributes"]["health"] == {"string": "gone"}
        assert "taints" not in devices[REGION0]
        assert all(p == [] for _, _, p in kube_apiserver.writes)
    finally:
        if plugin is not None:
            plugin.close()
        server.close()
        conn.close()
