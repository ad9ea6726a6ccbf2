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

"""The accelerator inventory document: the contract between the two halves.

ironic_accel writes it to ``node.extra["accelerators"]`` after every inventory
refresh; cyborg_lite reads it (from Ironic, or from a file in standalone mode).
Both sides validate it with :func:`validate`. This module imports nothing from
Ironic, so cyborg_lite can use it without Ironic installed.

doc/source/architecture.rst ("The inventory document") says what each field
means.

Versions: ``1.0`` requires each device's ``pci_address``, ``vendor_id`` and
``product_id``. ``1.1`` lets them be null (or absent) for a device the BMC
describes without them (no real BMC in the project's corpus gives a PCI
address): such a device is keyed by its ``id`` and ``redfish_uri`` (then
required), and the host agent's in-band discovery completes it
(:mod:`cyborg_lite.inventory.handle_discovery`). A writer names the lowest
version its document needs (:func:`version_for`), so a reader that knows
only ``1.0`` keeps reading every document that has all addresses.

A region's ``traits`` (optional, every version) are traits its provider
carries besides those its identity gives it: the host agent's, from the
operator's device spec. A reader that predates the field refuses such a
document, naming the field, rather than misreading it.

A device's ``health`` (optional, every version) is what its BMC reports of
it (Redfish ``Status.Health``: ``OK``, ``Warning`` or ``Critical``; null or
absent when the BMC says nothing). Like ``traits``, a reader that predates
it refuses the document, naming the field.

A ``PCI`` attach handle is listed once in the document; an ``MDEV`` handle
is listed once per vGPU instance its parent can hold of its type (every
version: the instances are alike, their count is what the list says).
"""

import enum
import functools
import hashlib
import json
import re
import uuid

import jsonschema
import os_traits

from accel_common import exception

#: The newest version of the document this module reads and writes.
SCHEMA_VERSION = "1.1"

#: Every version :func:`validate` accepts, oldest first.
SCHEMA_VERSIONS = ("1.0", "1.1")

#: The device fields version 1.0 requires and 1.1 lets be null: what only
#: in-band discovery may know.
IN_BAND_FIELDS = ("pci_address", "vendor_id", "product_id")

#: Where ironic_accel stores the document on the Ironic node.
NODE_EXTRA_KEY = "accelerators"

#: Namespace of the resource provider uuids of accelerator regions. Fixed
#: forever: changing it would orphan every provider already reported.
RP_NAMESPACE = uuid.UUID("6c5d0a3e-4b8e-5f0a-9d2e-a11ce1e7a0c5")

#: Cyborg's device types (its ``devices.type`` column, as the v2 API shows it).
DEVICE_TYPES = ("FPGA", "GPU", "NIC", "QAT", "AICHIP", "SSD", "NVME", "PCI")

PROGRAM_MODES = ("dynamic", "single")


class Health(enum.StrEnum):
    """A device's ``health``: the worst Redfish ``Status.Health`` its BMC
    reports for the card (members best first; absent or null when the BMC
    says nothing)."""

    #: Normal.
    OK = "OK"
    #: A condition needs attention; the card still works.
    WARNING = "Warning"
    #: The card needs immediate attention; it is not to be used.
    CRITICAL = "Critical"


#: A device's ``health`` values, best first.
HEALTH_VALUES = tuple(Health)

_PCI_ADDRESS = r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$"
_HEX_ID = r"^0x[0-9a-fA-F]{4}$"
_RESOURCE_CLASS = r"^([A-Z][A-Z0-9_]*|CUSTOM_[A-Z0-9_]+)$"
_TRAIT = r"^[A-Z][A-Z0-9_]{0,254}$"

_ATTACH_HANDLE = {
    "type": "object",
    "required": ["type", "pci_address"],
    "additionalProperties": False,
    "properties": {
        "type": {"enum": ["PCI", "MDEV"]},
        "pci_address": {"type": "string", "pattern": _PCI_ADDRESS},
        "mdev_type": {"type": "string", "minLength": 1},
        "physical_network": {"type": "string", "minLength": 1,
                             "maxLength": 64},
    },
    "if": {"properties": {"type": {"const": "MDEV"}}},
    "then": {"required": ["mdev_type"]},
}

_REGION = {
    "type": "object",
    "required": ["id", "rp_uuid", "resource_class"],
    "additionalProperties": False,
    "properties": {
        "id": {"type": "string", "minLength": 1, "maxLength": 64},
        "rp_uuid": {"type": "string", "format": "uuid",
                    "pattern": "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-"
                               "[0-9a-f]{4}-[0-9a-f]{12}$"},
        "resource_class": {"type": "string", "pattern": _RESOURCE_CLASS},
        "function_id": {"type": ["string", "null"], "maxLength": 255},
        "attach_handles": {"type": "array", "items": _ATTACH_HANDLE},
        "traits": {"type": "array", "uniqueItems": True,
                   "items": {"type": "string", "pattern": _TRAIT}},
    },
}

_DEVICE_1_0 = {
    "type": "object",
    "required": ["id", "type", "vendor_id", "product_id", "pci_address",
                 "program_mode", "regions"],
    "additionalProperties": False,
    "properties": {
        "id": {"type": "string", "pattern": r"^[A-Za-z0-9._-]{1,64}$"},
        "type": {"enum": list(DEVICE_TYPES)},
        "vendor_id": {"type": "string", "pattern": _HEX_ID},
        "product_id": {"type": "string", "pattern": _HEX_ID},
        "vendor": {"type": ["string", "null"], "maxLength": 255},
        "model": {"type": ["string", "null"], "maxLength": 255},
        "pci_address": {"type": "string", "pattern": _PCI_ADDRESS},
        "redfish_uri": {"type": ["string", "null"], "maxLength": 255},
        "firmware_version": {"type": ["string", "null"], "maxLength": 255},
        "health": {"enum": [*HEALTH_VALUES, None]},
        "program_mode": {"enum": list(PROGRAM_MODES)},
        "regions": {"type": "array", "minItems": 1, "items": _REGION},
    },
}


def _nullable(schema):
    return {"anyOf": [schema, {"type": "null"}]}


_DEVICE_1_1 = dict(
    _DEVICE_1_0,
    required=["id", "type", "program_mode", "regions"],
    properties=dict(
        _DEVICE_1_0["properties"],
        **{field: _nullable(_DEVICE_1_0["properties"][field])
           for field in IN_BAND_FIELDS}),
    # NOTE(accel): without a PCI address the Redfish URI is what says
    # which device of the BMC this is.
    **{"if": {"anyOf": [{"not": {"required": ["pci_address"]}},
                        {"properties": {"pci_address": {"type": "null"}}}]},
       "then": {"required": ["redfish_uri"],
                "properties": {"redfish_uri": {"type": "string",
                                               "minLength": 1}}}})


def _document_schema(version, device):
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "ironic-accel accelerator inventory document",
        "type": "object",
        "required": ["schema_version", "host", "devices"],
        "additionalProperties": False,
        "properties": {
            "schema_version": {"const": version},
            "node_uuid": {"type": ["string", "null"]},
            "host": {"type": "string", "minLength": 1, "maxLength": 255},
            "refreshed_at": {"type": ["string", "null"]},
            "devices": {"type": "array", "items": device},
        },
    }


#: The JSON schema of each version.
SCHEMAS = {"1.0": _document_schema("1.0", _DEVICE_1_0),
           "1.1": _document_schema("1.1", _DEVICE_1_1)}

#: The JSON schema of the newest version.
SCHEMA = SCHEMAS[SCHEMA_VERSION]

_VALIDATORS = {version: jsonschema.Draft202012Validator(schema)
               for version, schema in SCHEMAS.items()}


def _path(error):
    parts = []
    for part in error.absolute_path:
        parts.append(f"[{part}]" if isinstance(part, int) else f".{part}")
    return "document" + "".join(parts)


@functools.cache
def _standard_traits():
    return frozenset(os_traits.get_traits())


def fingerprint(document):
    """A digest of a document's content (key order aside): equal for two
    documents exactly when they describe the same host and devices."""
    text = json.dumps(document, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def validate(document):
    """Validate an inventory document.

    Checks the JSON schema, then what a schema cannot say: device ids unique
    in the document, region ids unique in a device, rp uuids and attach handle
    PCI addresses unique across the document, region traits ``CUSTOM_`` or
    standard, and the NIC rules of :func:`check_nic_region`.

    :param document: the decoded JSON document.
    :raises InvalidInventory: naming the first bad field.
    :returns: the document, unchanged.
    """
    version = (document.get("schema_version")
               if isinstance(document, dict) else None)
    if isinstance(document, dict) and version not in _VALIDATORS:
        raise exception.InvalidInventory(
            f"document.schema_version: {version!r} is not one of the "
            f"versions this reader knows ({', '.join(SCHEMA_VERSIONS)})")
    validator = _VALIDATORS.get(version, _VALIDATORS[SCHEMA_VERSION])
    errors = sorted(validator.iter_errors(document),
                    key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        error = errors[0]
        raise exception.InvalidInventory(f"{_path(error)}: {error.message}")

    device_ids, rp_uuids, handles = set(), set(), set()
    for d_index, device in enumerate(document["devices"]):
        where = f"document.devices[{d_index}]"
        if device["id"] in device_ids:
            raise exception.InvalidInventory(
                f"{where}.id: duplicate device id {device['id']!r}")
        device_ids.add(device["id"])
        region_ids = set()
        for r_index, region in enumerate(device["regions"]):
            r_where = f"{where}.regions[{r_index}]"
            if region["id"] in region_ids:
                raise exception.InvalidInventory(
                    f"{r_where}.id: duplicate region id {region['id']!r}")
            region_ids.add(region["id"])
            if region["rp_uuid"] in rp_uuids:
                raise exception.InvalidInventory(
                    f"{r_where}.rp_uuid: duplicate {region['rp_uuid']}")
            rp_uuids.add(region["rp_uuid"])
            for h_index, handle in enumerate(region.get("attach_handles",
                                                        [])):
                key = (handle["pci_address"].lower(),
                       handle.get("mdev_type"))
                if handle["type"] == "PCI" and key in handles:
                    raise exception.InvalidInventory(
                        f"{r_where}.attach_handles[{h_index}].pci_address: "
                        f"{handle['pci_address']} is listed twice")
                handles.add(key)
            for t_index, trait in enumerate(region.get("traits", [])):
                if not (trait.startswith("CUSTOM_")
                        or trait in _standard_traits()):
                    raise exception.InvalidInventory(
                        f"{r_where}.traits[{t_index}]: {trait!r} is neither "
                        f"CUSTOM_ nor a standard trait")
            if device["type"] == "NIC":
                check_nic_region(device, region, r_where)
    return document


def check_nic_region(device, region, where="region"):
    """Refuse a NIC region Nova could not plug a port into, or that
    Placement could not describe with one physical network.

    Nova writes a NIC handle's ``physical_network`` into the port's
    binding profile (and fails without one), and Neutron binds the port on
    that physical network without comparing it with the network's; so
    every PCI handle of a NIC region carries ``physical_network``, all the
    same, and the handles are either the device's own function (the whole
    port, ``CUSTOM_PF``) or its virtual functions (``CUSTOM_VF``), not
    both.

    :param device: a device of the document (``type`` ``NIC``).
    :param region: one of its regions.
    :param where: the region's path in the document, for messages.
    :raises InvalidInventory: naming the region and the handle.
    """
    label = region_label(device, region)
    physnets = {}
    kinds = set()
    for h_index, handle in enumerate(region.get("attach_handles", [])):
        if handle["type"] != "PCI":
            continue
        h_where = f"{where}.attach_handles[{h_index}]"
        physnet = handle.get("physical_network")
        if not physnet:
            raise exception.InvalidInventory(
                f"{h_where}.physical_network: NIC region {label} handle "
                f"{handle['pci_address']} has no physical_network; Nova "
                f"cannot bind a port to it (name the Neutron physical "
                f"network its port is wired to)")
        if not trait_fragment(physnet):
            raise exception.InvalidInventory(
                f"{h_where}.physical_network: {physnet!r} of NIC region "
                f"{label} handle {handle['pci_address']} has no letter or "
                f"digit to name its trait")
        physnets.setdefault(physnet, handle["pci_address"])
        kinds.add(nic_function(device, handle))
    if len(physnets) > 1:
        named = ", ".join(f"{net} ({address})"
                          for net, address in physnets.items())
        raise exception.InvalidInventory(
            f"{where}.attach_handles: NIC region {label} mixes physical "
            f"networks {named}; a region's handles share one (make one "
            f"region per port)")
    if len(kinds) > 1:
        raise exception.InvalidInventory(
            f"{where}.attach_handles: NIC region {label} lists both the "
            f"device's own function {device.get('pci_address')} and "
            f"virtual functions; list either the whole port or its VFs")


#: The trait of a NIC region whose handles are virtual functions, as real
#: Cyborg's NIC driver names it.
NIC_VF_TRAIT = "CUSTOM_VF"
#: The trait of a NIC region whose handle is the whole port (the physical
#: function itself).
NIC_PF_TRAIT = "CUSTOM_PF"


def nic_function(device, handle):
    """:data:`NIC_PF_TRAIT` when ``handle`` is the device's own PCI
    address (the whole port), else :data:`NIC_VF_TRAIT` (a virtual
    function of it; also when the document does not know the device's
    address, since a BMC sees the port, never its VFs)."""
    own = (device.get("pci_address") or "").lower()
    if own and handle["pci_address"].lower() == own:
        return NIC_PF_TRAIT
    return NIC_VF_TRAIT


def physnet_trait(physnet):
    """``CUSTOM_<PHYSNET>``: the trait of a NIC region on the Neutron
    physical network ``physnet`` (``physnet1`` -> ``CUSTOM_PHYSNET1``), as
    real Cyborg's NIC driver names it; a character a trait cannot hold
    (``-``, ``.``) becomes ``_`` where Cyborg's name would be refused by
    Placement."""
    return "CUSTOM_" + trait_fragment(physnet)


def has_address(device):
    """True when a document's device carries its PCI address."""
    return bool(device.get("pci_address"))


def device_key(device):
    """What names a device in messages and labels: its PCI address
    (lower case) when known, else its id."""
    return (device["pci_address"].lower() if has_address(device)
            else device["id"])


def region_label(device, region):
    """``<device key>/<region id>``, as sync reports name regions."""
    return f"{device_key(device)}/{region['id']}"


def version_for(devices):
    """The lowest schema version a document with ``devices`` needs."""
    if all(device.get(field) for device in devices
           for field in IN_BAND_FIELDS):
        return SCHEMA_VERSIONS[0]
    return SCHEMA_VERSION


def region_rp_uuid(node_uuid, device_id, region_id):
    """The stable resource provider uuid of one region of one device.

    :param node_uuid: the Ironic node (or, standalone, the host name).
    :param device_id: the device id in the document.
    :param region_id: the region id (a device without regions is reported
        as one region, ``"0"``).
    """
    key = f"{node_uuid}/{device_id}/{region_id}"
    return str(uuid.uuid5(RP_NAMESPACE, key))


def trait_fragment(text):
    """Turn free text into a valid os-traits name fragment.

    Upper case, ``[A-Z0-9_]`` only: every other character (``-``, ``.``,
    spaces) becomes ``_``. Real Cyborg mapped ``-`` to ``_-``, which makes an
    invalid trait name; this fixes that while keeping its names otherwise.
    """
    fragment = re.sub(r"[^A-Z0-9_]", "_", str(text).upper())
    return re.sub(r"_+", "_", fragment).strip("_")


def function_trait(vendor, function_id):
    """``CUSTOM_FPGA_FUNCTION_ID_<VENDOR>_<FUNCTION>``, as real Cyborg names
    it."""
    return (f"CUSTOM_FPGA_FUNCTION_ID_{trait_fragment(vendor)}_"
            f"{trait_fragment(function_id)}")


FUNCTION_TRAIT_PREFIX = "CUSTOM_FPGA_FUNCTION_ID_"

#: cyborg_lite's lock traits: a region whose content is pinned (an attach
#: handle of its programming unit in use, or a programming run under way)
#: carries exactly one, naming what it is pinned to (:func:`lock_trait`).
LOCK_TRAIT_PREFIX = "CUSTOM_ACCEL_LOCKED_"

#: Placement's limit on a trait name.
_TRAIT_MAX = 255


def lock_trait(function_id=None, bitstream_id=None):
    """The lock trait of a region pinned to ``function_id`` (or, without
    one, ``bitstream_id``; with neither: to no function at all).

    ``CUSTOM_ACCEL_LOCKED_FN_<FUNCTION>``, ``CUSTOM_ACCEL_LOCKED_BS_<ID>``
    or ``CUSTOM_ACCEL_LOCKED_EMPTY``; a name over Placement's 255
    characters is cut and ends with a digest of the whole.
    """
    if function_id:
        name = LOCK_TRAIT_PREFIX + "FN_" + trait_fragment(function_id)
    elif bitstream_id:
        name = LOCK_TRAIT_PREFIX + "BS_" + trait_fragment(bitstream_id)
    else:
        return LOCK_TRAIT_PREFIX + "EMPTY"
    if len(name) > _TRAIT_MAX:
        digest = hashlib.sha256(name.encode()).hexdigest()[:16].upper()
        name = f"{name[:_TRAIT_MAX - 17]}_{digest}"
    return name
