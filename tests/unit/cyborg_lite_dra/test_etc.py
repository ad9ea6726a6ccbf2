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

"""The Kubernetes examples in etc/cyborg_lite_dra agree with the plugin:
DeviceClasses select on attributes it publishes and name its driver, the
RBAC grants the calls it makes, the DaemonSet mounts its default
directories."""

import pathlib
import re

import yaml

from cyborg_lite_dra import inventory
from cyborg_lite_dra import service
from cyborg_lite_dra import slices
from cyborg_lite_dra.conf import dra

ETC = pathlib.Path(__file__).resolve().parents[3] / "etc" / "cyborg_lite_dra"
DRIVER = dra.DEFAULT_DRIVER_NAME


def _load(name):
    return [d for d in yaml.safe_load_all((ETC / name).read_text()) if d]


def test_device_classes_select_published_attributes():
    entry = slices.device_entry(inventory.NodeDevice(
        name="d", rp_uuid="r", deployable_uuid="u", type="FPGA",
        vendor_id="v", product_id="p", pci_address="0000:00:00.0",
        region="0", resource_class="FPGA", bitstream_id="b",
        num_accelerators=1, model="m", function_trait="t"))
    published = set(entry["attributes"])
    classes = _load("deviceclasses.yaml")
    assert len(classes) >= 4
    for item in classes:
        assert (item["apiVersion"], item["kind"]) == ("resource.k8s.io/v1",
                                                      "DeviceClass")
        (config,) = item["spec"]["config"]
        assert config["opaque"]["driver"] == DRIVER
        assert set(config["opaque"]["parameters"]) == {"deviceProfile"}
        for selector in item["spec"]["selectors"]:
            expression = selector["cel"]["expression"]
            assert f'device.driver == "{DRIVER}"' in expression
            used = set(re.findall(
                r'device\.attributes\["' + re.escape(DRIVER)
                + r'"\]\.(\w+)', expression))
            assert used and used <= published, used - published


def test_rbac_grants_what_the_plugin_calls():
    (role,) = [d for d in _load("rbac.yaml") if d["kind"] == "ClusterRole"]
    grants = {(r, v) for rule in role["rules"] for r in rule["resources"]
              for v in rule["verbs"]}
    for needed in [("resourceclaims", "get"),
                   ("resourceclaims/status", "update"),
                   ("resourceslices", "list"),
                   ("resourceslices", "create"), ("resourceslices", "update"),
                   ("resourceslices", "delete")]:
        assert needed in grants


def test_daemonset_mounts_the_default_directories():
    (daemonset,) = _load("daemonset.yaml")
    (container,) = daemonset["spec"]["template"]["spec"]["containers"]
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    conf = dra.opts
    defaults = {o.name: o.default for o in conf}
    for option in ("registry_dir", "cdi_dir", "sysfs_root"):
        assert defaults[option] in mounts
    assert "/var/lib/kubelet/plugins" in mounts
    assert any(e["name"] == "OS_DRA__NODE_NAME" for e in container["env"])


def test_daemonset_probes_the_health_service():
    (daemonset,) = _load("daemonset.yaml")
    (container,) = daemonset["spec"]["template"]["spec"]["containers"]
    probe = container["livenessProbe"]["grpc"]
    defaults = {o.name: o.default for o in dra.opts}
    assert probe == {"port": defaults["healthcheck_port"],
                     "service": "liveness"}
    assert probe["service"] in service.HealthServicer.SERVICES
