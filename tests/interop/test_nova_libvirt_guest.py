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

"""What the guest gets: Nova 34's libvirt driver on cyborg_lite's ARQs.

The attach handles come from the agent's drivers as they discover them
(``sim``, ``intel_opae`` and ``xilinx_xrt`` on their fake sysfs trees and
tools, ``nvidia_mdev`` on a fake sysfs tree), plus a NIC VF with a physical
network as a PCI passthrough driver reports it; each is imported into a
real cyborg_lite, bound the way Nova binds, and the ARQs
``GET /v2/accelerator_requests?instance=`` answers are handed to Nova's own
code (:mod:`tests.interop.nova_libvirt_guest`, in Nova's virtualenv), which
builds the guest as ``LibvirtDriver.spawn`` does. The guest XML must hold
exactly the handle: a managed ``<hostdev>`` of the handle's PCI address for
a PCI handle; for an MDEV handle, the mdev of the asked type on the
handle's parent, named by the handle's uuid, created by Nova (the one
creator of a vGPU's mdev) and used again, not created twice, by the next
instance bound to that handle.
"""

import json
import os
import pathlib
import subprocess
import uuid
from xml.etree import ElementTree

import requests

from accel_common import inventory
from cyborg_lite.agent.drivers import intel_opae
from cyborg_lite.agent.drivers import nvidia_mdev
from cyborg_lite.agent.drivers import sim
from cyborg_lite.agent.drivers import xilinx_xrt
from tests.fixtures import nova as nova_fixtures
from tests.interop.test_nova_flow import NovaCyborgClient
from tests.unit.cyborg_lite.agent.conftest import copy_sysfs
from tests.unit.cyborg_lite.agent.conftest import fake_tool
from tests.unit.cyborg_lite.agent.conftest import make_conf

SCRIPT = pathlib.Path(__file__).with_name("nova_libvirt_guest.py")
#: a NIC's SR-IOV VFs as a PCI passthrough driver reports them.
NIC_VFS = [{"type": "NIC", "vendor_id": "0x15b3", "product_id": "0x101e",
            "vendor": "Mellanox", "pci_address": "0000:3d:00.0",
            "program_mode": "single",
            "regions": [{"id": "0", "function_id": None, "attach_handles": [
                {"type": "PCI", "pci_address": f"0000:3d:00.{vf}",
                 "physical_network": "physnet1"} for vf in (2, 3)]}]}]
A100_VF = "0000:41:00.4"
HANDLE_FIELDS = ("type", "pci_address", "mdev_type", "physical_network")
#: guests booted on each vGPU region (one handle per vGPU instance, each
#: guest gets its own).
VGPU_GUESTS = 3


def _discovered(tmp_path):
    """Driver name -> the devices its ``discover`` answers."""
    found = {}
    conf = make_conf(enabled_drivers=["sim"],
                     sim_state_dir=str(tmp_path / "sim"),
                     image_catalog_dir=str(tmp_path / "catalog"),
                     sim_program_seconds=0)
    found["sim"] = sim.SimDriver(conf).discover()
    opae = tmp_path / "opae"
    opae.mkdir()
    found["intel_opae"] = intel_opae.IntelOpaeDriver(make_conf(
        sysfs_root=copy_sysfs("sysfs_opae", opae))).discover()
    xrt = tmp_path / "xrt"
    xrt.mkdir()
    xbmgmt, _ = fake_tool(xrt, "xbmgmt", stdout_file="xbmgmt_examine.txt")
    found["xilinx_xrt"] = xilinx_xrt.XilinxXrtDriver(make_conf(
        sysfs_root=copy_sysfs("sysfs_xrt", xrt),
        xbmgmt_path=xbmgmt)).discover()
    found["pci"] = NIC_VFS
    return found


def _nvidia(tmp_path):
    root = copy_sysfs("sysfs_nvidia", tmp_path)
    return root, nvidia_mdev.NvidiaMdevDriver(make_conf(sysfs_root=root))


def _resource_class(device, handles):
    if handles and handles[0]["type"] == "MDEV":
        return "VGPU"
    return {"FPGA": "FPGA", "GPU": "PGPU"}.get(device["type"],
                                              "CUSTOM_PCI_" + device["type"])


def _document(host, devices, node=None):
    """An inventory document of the devices, their handles' fields as the
    agent merges them (:mod:`cyborg_lite.agent.handles`)."""
    node = node or str(uuid.uuid4())
    listed = []
    for index, device in enumerate(devices):
        device_id = f"dev{index}"
        regions = []
        for region in device["regions"]:
            handles = [{key: found[key] for key in HANDLE_FIELDS
                        if found.get(key)}
                       for found in region.get("attach_handles", [])]
            if not handles:
                continue
            regions.append({
                "id": region["id"],
                "rp_uuid": inventory.region_rp_uuid(node, device_id,
                                                    region["id"]),
                "resource_class": _resource_class(device, handles),
                "function_id": region.get("function_id"),
                "attach_handles": handles})
        if regions:
            listed.append({
                "id": device_id, "type": device["type"],
                "vendor_id": device["vendor_id"],
                "product_id": device["product_id"],
                "vendor": device.get("vendor"), "model": device.get("model"),
                "pci_address": device["pci_address"], "redfish_uri": None,
                "firmware_version": None,
                "program_mode": device["program_mode"], "regions": regions})
    return inventory.validate({
        "schema_version": inventory.SCHEMA_VERSION, "node_uuid": node,
        "host": host, "refreshed_at": None, "devices": listed})


def _profile(server, resource_class):
    name = f"dp-{uuid.uuid4().hex[:10]}"
    resp = requests.post(f"{server.url}/v2/device_profiles", timeout=30,
                         json=[{"name": name, "groups": [
                             {f"resources:{resource_class}": "1"}]}])
    assert resp.status_code == 201, resp.text
    return name


def _boot(client, server, host, region):
    """Nova's create, bind and read of one ARQ on ``region``: the
    instance's uuid and its ``accel_info``."""
    instance = str(uuid.uuid4())
    (arq,) = client.create_arqs(_profile(server, region["resource_class"]))
    resp = client.bind_arqs({arq["uuid"]: {
        "hostname": host, "device_rp_uuid": region["rp_uuid"],
        "instance_uuid": instance}})
    assert resp.status_code == 202, resp.text
    assert client.wait_resolved(instance).status_code == 200
    accel_info = client.get_arqs_for_instance(instance, only_resolved=True)
    assert [a["state"] for a in accel_info] == ["Bound"], accel_info
    return instance, accel_info


def _nova_spawns(accel_infos):
    """Nova's libvirt driver (one compute host) spawning one guest per
    ``accel_info``, in order: what the guests and libvirt got."""
    python = pathlib.Path(nova_fixtures.venv()) / "bin" / "python"
    result = subprocess.run(
        [str(python), "-W", "ignore", str(SCRIPT)], timeout=300,
        input=json.dumps(accel_infos), capture_output=True, text=True,
        env=dict(os.environ, PYTHONPATH=""))
    assert result.returncode == 0, result.stderr[-4000:]
    return json.loads(result.stdout)


def _hostdevs(xml):
    return ElementTree.fromstring(xml).findall("./devices/hostdev")


def _pci(address):
    domain, bus, rest = address.split(":")
    slot, function = rest.split(".")
    return tuple(int(part, 16) for part in (domain, bus, slot, function))


def _source_pci(hostdev):
    address = hostdev.find("source/address")
    return tuple(int(address.get(key), 16)
                 for key in ("domain", "bus", "slot", "function"))


def _arq_address(arq):
    info = arq["attach_handle_info"]
    return "{}:{}:{}.{}".format(*(info[key] for key in (
        "domain", "bus", "device", "function")))


def _assert_guest_has_exactly(spawn, arq, handles):
    """The guest holds the ARQ's handle (one of ``handles``, the region's)
    and nothing else; Nova ignored nothing."""
    assert not [line for line in spawn["log"] if "Ignoring" in line], (
        spawn["log"])
    (hostdev,) = _hostdevs(spawn["xml"])
    address = _arq_address(arq)
    assert address in {h["pci_address"] for h in handles}
    if arq["attach_handle_type"] == "PCI":
        assert (hostdev.get("type"), hostdev.get("managed")) == ("pci", "yes")
        assert _source_pci(hostdev) == _pci(address)
        assert spawn["node_devices"] == []
    else:
        assert arq["attach_handle_type"] == "MDEV"
        assert (hostdev.get("type"), hostdev.get("model")) == (
            "mdev", "vfio-pci")
        assert hostdev.find("source/address").get("uuid") == (
            arq["attach_handle_uuid"])


def _node_device(xml):
    root = ElementTree.fromstring(xml)
    return (root.findtext("parent"),
            root.find("capability/type").get("id"),
            root.findtext("capability/uuid"))


def test_every_handle_type_reaches_the_guest_as_libvirt_needs_it(
        server, tmp_path):
    client = NovaCyborgClient(server.url + "/v2", uuid.uuid4().hex)
    _, nvidia = _nvidia(tmp_path)
    discovered = dict(_discovered(tmp_path), nvidia_mdev=nvidia.discover())
    boots = []
    for driver, devices in sorted(discovered.items()):
        host = f"{driver}-{uuid.uuid4().hex[:8]}.example.org"
        document = _document(host, devices)
        assert document["devices"], driver
        server.import_inventory(document)
        for device in document["devices"]:
            for region in device["regions"]:
                guests = 1
                if region["attach_handles"][0]["type"] == "MDEV":
                    guests = min(len(region["attach_handles"]), VGPU_GUESTS)
                for _ in range(guests):
                    _, accel_info = _boot(client, server, host, region)
                    boots.append((driver, region, accel_info))
    assert {arq["attach_handle_type"] for _, _, (arq,) in boots} == {
        "PCI", "MDEV"}
    vgpus = [arq["attach_handle_uuid"] for _, _, (arq,) in boots
             if arq["attach_handle_type"] == "MDEV"]
    assert len(vgpus) > VGPU_GUESTS
    assert len(set(vgpus)) == len(vgpus)

    spawns = _nova_spawns([accel_info for _, _, accel_info in boots])

    for (driver, region, (arq,)), spawn in zip(boots, spawns, strict=True):
        _assert_guest_has_exactly(spawn, arq, region["attach_handles"])
        if arq["attach_handle_type"] == "MDEV":
            handle = region["attach_handles"][0]
            create, define = spawn["node_devices"]
            parent = "pci_" + handle["pci_address"].replace(
                ":", "_").replace(".", "_")
            assert (create["call"], define["call"]) == ("create", "define")
            assert _node_device(create["xml"]) == _node_device(
                define["xml"]) == (parent, handle["mdev_type"],
                                   arq["attach_handle_uuid"])
            assert arq["attach_handle_info"]["asked_type"] == (
                handle["mdev_type"])
            assert define["autostart"] is True
        if driver == "pci":
            assert arq["attach_handle_info"]["physical_network"] == (
                "physnet1")


def _kernel_has(root, parent, mdev_type, mdev_uuid):
    """The fake sysfs tree as the kernel shows an mdev Nova created."""
    type_dir = pathlib.Path(root, "sys", "class", "mdev_bus", parent,
                            "mdev_supported_types", mdev_type)
    (type_dir / "devices" / mdev_uuid).mkdir(parents=True)
    available = type_dir / "available_instances"
    available.write_text(f"{int(available.read_text()) - 1}\n")
    pathlib.Path(root, "sys", "bus", "mdev", "devices", mdev_uuid).mkdir(
        parents=True)


def test_a_deleted_instance_leaves_its_vgpu_to_the_next_on_its_handle(
        server, tmp_path):
    """Nova creates a vGPU's mdev at the first spawn on a handle and never
    destroys it; deleting the ARQs frees the handle, and the mdev with it:
    the agent still reports the handle, and the next instance bound to it
    gets the same mdev, found by Nova, not created a second time."""
    client = NovaCyborgClient(server.url + "/v2", uuid.uuid4().hex)
    root, nvidia = _nvidia(tmp_path)
    a100 = [d for d in nvidia.discover()
            if d["regions"][0]["attach_handles"][0]["pci_address"]
            == A100_VF]
    host = f"vgpu-{uuid.uuid4().hex[:8]}.example.org"
    document = _document(host, a100)
    server.import_inventory(document)
    (region,) = document["devices"][0]["regions"]
    (handle,) = region["attach_handles"]

    first, (arq1,) = _boot(client, server, host, region)
    # NOTE(interop): what Nova's spawn left on the host (first spawn below).
    _kernel_has(root, A100_VF, handle["mdev_type"],
                arq1["attach_handle_uuid"])
    # The agent's next report lists the same handle: the host's mdev is
    # counted as the handle it is, and its uuid stays the mdev's name.
    rediscovered = _document(host, [d for d in nvidia.discover()
                                    if d["pci_address"] == a100[0][
                                        "pci_address"]],
                             node=document["node_uuid"])
    assert rediscovered == document
    server.import_inventory(rediscovered)
    assert client.delete_arqs_for_instance(first).status_code == 204
    second, (arq2,) = _boot(client, server, host, region)

    spawns = _nova_spawns([[arq1], [arq2]])

    assert arq2["attach_handle_uuid"] == arq1["attach_handle_uuid"]
    _assert_guest_has_exactly(spawns[0], arq1, [handle])
    _assert_guest_has_exactly(spawns[1], arq2, [handle])
    assert [d["call"] for d in spawns[0]["node_devices"]] == [
        "create", "define"]
    assert spawns[1]["node_devices"] == []
    assert client.delete_arqs_for_instance(second).status_code == 204
