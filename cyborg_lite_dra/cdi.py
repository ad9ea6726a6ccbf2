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

"""CDI (Container Device Interface) specs: one per prepared claim.

The spec of a claim is a transient spec file in the CDI directory, named as
the CDI library names them (``<vendor>-<class>_<claim uid>.json``); its
devices are named ``<claim uid>-<device>`` and their CDI IDs
``<driver>/accelerator=<claim uid>-<device>``. Each spec is written at the
lowest CDI version that holds it, so older runtimes read it (podman 4.3
reads 0.3.0 to 0.5.0).
"""

import os
import re

from cyborg_lite_dra import fileio

CLASS = "accelerator"

#: Released CDI spec versions, oldest first.
VERSIONS = ("0.3.0", "0.4.0", "0.5.0", "0.6.0", "0.7.0")

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$")


def kind(driver):
    """The CDI kind of the plugin's devices: ``<driver>/accelerator``."""
    return f"{driver}/{CLASS}"


def device_name(claim_uid, device):
    """The CDI device name of ``device`` prepared for a claim."""
    name = f"{claim_uid}-{device}"
    if not _NAME.match(name):
        raise ValueError(f"{name!r} is not a valid CDI device name")
    return name


def device_id(driver, claim_uid, device):
    """The fully qualified CDI device ID the runtime resolves."""
    return f"{kind(driver)}={device_name(claim_uid, device)}"


def spec_path(cdi_dir, driver, claim_uid):
    """The transient spec file of a claim."""
    vendor = driver.replace("/", "_")
    return os.path.join(cdi_dir, f"{vendor}-{CLASS}_{claim_uid}.json")


def _edits(spec):
    yield spec.get("containerEdits", {})
    for device in spec.get("devices", []):
        yield device.get("containerEdits", {})


def minimum_version(spec):
    """The lowest CDI version whose features ``spec`` uses.

    The rules of the CDI reference library (specs-go/version.go): 0.7.0
    for intelRdt or additionalGids, 0.6.0 for annotations or a dot in the
    kind's class, 0.5.0 for a device name not starting with a letter or a
    device node with hostPath, 0.4.0 for a mount with a type.
    """
    edits = list(_edits(spec))
    if any(e.get("intelRdt") or e.get("additionalGids") for e in edits):
        return "0.7.0"
    vendor, _, class_ = spec.get("kind", "").partition("/")
    if (spec.get("annotations")
            or any(d.get("annotations") for d in spec.get("devices", []))
            or (vendor and "." in class_)):
        return "0.6.0"
    if (any(d.get("name", "a")[:1] and not d["name"][0].isalpha()
            for d in spec.get("devices", []))
            or any(n.get("hostPath") for e in edits
                   for n in e.get("deviceNodes", []))):
        return "0.5.0"
    if any(m.get("type") for e in edits for m in e.get("mounts", [])):
        return "0.4.0"
    return "0.3.0"


def build_spec(driver, claim_uid, devices):
    """The CDI spec of a claim.

    :param devices: ``[(device name, containerEdits)]``.
    :returns: the spec document, at its minimum version.
    """
    spec = {"cdiVersion": VERSIONS[0], "kind": kind(driver),
            "devices": [{"name": device_name(claim_uid, name),
                         "containerEdits": edits}
                        for name, edits in devices]}
    spec["cdiVersion"] = minimum_version(spec)
    return spec


def write_spec(cdi_dir, driver, claim_uid, spec):
    """Write a claim's spec (atomically); returns its path."""
    path = spec_path(cdi_dir, driver, claim_uid)
    fileio.write_json_atomic(path, spec)
    return path


def remove_spec(cdi_dir, driver, claim_uid):
    """Remove a claim's spec; one already gone is fine."""
    fileio.remove(spec_path(cdi_dir, driver, claim_uid))
