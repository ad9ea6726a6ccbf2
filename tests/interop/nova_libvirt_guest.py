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

"""Nova 34's libvirt driver building a guest from ARQs (Nova's virtualenv).

Run with the Nova virtualenv's Python, not the project's: it imports Nova.
Reads a JSON list of spawns on standard input, each the ``accel_info``
(ARQs as ``GET /v2/accelerator_requests?instance=`` answered them) of one
instance, and runs, for each, what ``LibvirtDriver.spawn`` runs with them on
one driver (one compute host): ``_allocate_cyborg_mdevs(accel_info)`` and
``_get_guest_xml(..., mdevs=..., accel_info=...)``. Libvirt is Nova's own
fake (``nova.tests.fixtures.libvirt``, what Nova's functional tests run the
real driver on), with one change: a node device Nova creates exists from
then on, as it does in libvirt (Nova's fake forgets it).

Writes a JSON list on standard output, one entry per spawn:
``{"xml": the guest XML, "node_devices": [what Nova asked libvirt to do
with node devices: {"call": "create" or "define", "xml": ...,
"autostart": ...}], "log": [Nova's log lines at INFO and above]}``.
"""

import importlib
import json
import logging
import os
import sys
import tempfile
import types
from xml.etree import ElementTree

import fixtures
from nova import config
from nova import context as nova_context
from nova import objects
from nova.conf import devices as devices_conf
from nova.conf import neutron as neutron_conf
import nova.tests
from nova.virt import fake
from nova.virt.libvirt import driver as libvirt_driver
from nova.virt.libvirt import utils as libvirt_utils


def _nova_fixtures_package():
    """``nova.tests.fixtures`` without its ``__init__``, which imports every
    fixture and with them Nova's test requirements (testtools, ...) that
    Nova's own virtualenv does not hold; the fake libvirt needs none."""
    package = types.ModuleType("nova.tests.fixtures")
    package.__path__ = [os.path.join(os.path.dirname(nova.tests.__file__),
                                     "fixtures")]
    sys.modules["nova.tests.fixtures"] = package
    nova.tests.fixtures = package
    return importlib.import_module("nova.tests.fixtures.libvirt")


fakelibvirt = _nova_fixtures_package()


class _Log(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def _instance():
    flavor = objects.Flavor(memory_mb=2048, swap=0, vcpu_weight=None,
                            root_gb=10, id=2, name="m1.small", ephemeral_gb=0,
                            rxtx_factor=1.0, flavorid="1", vcpus=2,
                            extra_specs={})
    return objects.Instance(
        id=1, uuid="6b9c4d8e-0f1a-4a4f-9d0e-5b1f2c3d4e5f",
        display_name="accel", vcpus=2, memory_mb=2048, project_id="p",
        user_id="u", image_ref="155d900f-4e14-4e4c-a73d-069cbf4541e6",
        root_gb=10, ephemeral_gb=0, flavor=flavor, new_flavor=None,
        old_flavor=None, pci_devices=objects.PciDeviceList(),
        numa_topology=None, config_drive="", vm_mode=None, vm_state=None,
        kernel_id=None, ramdisk_id=None, os_type="linux", host="fake-host",
        node="fake-node", task_state=None, trusted_certs=None,
        resources=None, migration_context=None, info_cache=None,
        ephemeral_key_uuid=None, vcpu_model=None,
        system_metadata={"image_base_image_ref": "155d900f",
                         "image_disk_format": "raw"})


class _DefinedNodeDevice:
    """What nodeDeviceDefineXML returns: a persistent node device."""

    def __init__(self, name, record):
        self._name, self._record = name, record

    def name(self):
        return self._name

    def setAutostart(self, autostart):  # noqa: N802 (libvirt's name)
        self._record["autostart"] = bool(autostart)
        return 0


def _mdev_name(xml):
    root = ElementTree.fromstring(xml)
    cap = root.find("capability[@type='mdev']")
    parent = root.findtext("parent")
    name = "{}_{}".format(libvirt_utils.mdev_uuid2name(cap.findtext("uuid")),
                          parent[len("pci_"):])
    return name, parent, cap.find("type").get("id")


def _node_devices_as_libvirt_keeps_them(node_devices):
    """libvirt's nodeDeviceCreateXML and nodeDeviceDefineXML: the mdev
    exists afterwards, found by name (``mdev_<uuid>_<parent address>``);
    each call is recorded in ``node_devices``."""
    def create(self, xml, flags):
        name, parent, mdev_type = _mdev_name(xml)
        node_devices.append({"call": "create", "xml": xml})
        self.mdev_info.devices[name] = fakelibvirt.FakeMdevDevice(
            dev_name=name, type_id=mdev_type, parent=parent)

    def define(self, xml, flags):
        record = {"call": "define", "xml": xml, "autostart": False}
        node_devices.append(record)
        return _DefinedNodeDevice(_mdev_name(xml)[0], record)

    def lookup(self, name):
        if name.startswith("mdev") and name not in self.mdev_info.devices:
            raise fakelibvirt.make_libvirtError(
                fakelibvirt.libvirtError, f"no nodedev {name}",
                error_code=fakelibvirt.VIR_ERR_NO_NODE_DEVICE,
                error_domain=fakelibvirt.VIR_FROM_NODEDEV)
        return original_lookup(self, name)

    original_lookup = fakelibvirt.Connection.nodeDeviceLookupByName
    connection = "nova.tests.fixtures.libvirt.Connection."
    return [fixtures.MonkeyPatch(connection + "nodeDeviceCreateXML", create),
            fixtures.MonkeyPatch(connection + "nodeDeviceDefineXML", define),
            fixtures.MonkeyPatch(connection + "nodeDeviceLookupByName",
                                 lookup)]


def main():
    spawns = json.load(sys.stdin)
    config.parse_args([], configure_db=False, init_rpc=False)
    # NOTE(interop): as Nova's ConfFixture does; nova-compute registers them
    # while reading its configuration.
    neutron_conf.register_dynamic_opts(config.CONF)
    devices_conf.register_dynamic_opts(config.CONF)
    config.CONF.set_override("virt_type", "kvm", group="libvirt")
    config.CONF.set_override("instances_path", tempfile.mkdtemp())
    objects.register_all()
    log = _Log()
    logging.getLogger("nova").addHandler(log)
    logging.getLogger("nova").setLevel(logging.INFO)
    node_devices = []
    with fixtures.MonkeyPatch("nova.virt.libvirt.host.Host._init_events",
                              lambda self: None), \
            fakelibvirt.LibvirtFixture():
        for patch in _node_devices_as_libvirt_keeps_them(node_devices):
            patch.setUp()
        drvr = libvirt_driver.LibvirtDriver(fake.FakeVirtAPI(), False)
        ctxt = nova_context.get_admin_context()
        image_meta = objects.ImageMeta.from_dict({"disk_format": "raw"})
        results = []
        for accel_info in spawns:
            del node_devices[:], log.lines[:]
            instance = _instance()
            mdevs = drvr._allocate_cyborg_mdevs(accel_info)
            xml = drvr._get_guest_xml(ctxt, instance, [], {"mapping": {}},
                                      image_meta, mdevs=mdevs,
                                      accel_info=accel_info)
            results.append({"xml": xml, "node_devices": list(node_devices),
                            "log": list(log.lines)})
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
