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

"""The provider tree an inventory document asks for.

Pure functions: no Placement calls here. One child provider per region of
each device, under the compute-node provider named ``document["host"]``,
with traits named as real Cyborg's drivers name them
(``CUSTOM_FPGA_<VENDOR>``, ``CUSTOM_NVIDIA_<PRODUCT_ID>``, ...: see
:func:`identity_traits`) so device profiles written for Cyborg keep
matching.
"""

import dataclasses
import re
import uuid

import os_resource_classes as orc
import os_traits

from accel_common import exception
from accel_common import inventory

#: Placement's limit on provider names.
MAX_NAME_LENGTH = 200

_TRAIT_RE = re.compile(r"^[A-Z0-9_]{1,255}$")

#: Vendor names by PCI vendor id, for documents without ``vendor``; the
#: names are those real Cyborg drivers put into traits.
VENDOR_NAMES = {
    "0x8086": "INTEL",
    "0x10ee": "XILINX",
    "0x1bd4": "INSPUR",
    "0x10de": "NVIDIA",
    "0x19e5": "HUAWEI",
    "0x1002": "AMD",
}

#: Prefixes of the traits the reporter owns: a trait with one of these
#: prefixes that the document no longer asks for is removed. Function
#: traits (``CUSTOM_FPGA_FUNCTION_ID_``) are excluded: cyborg_lite owns
#: them once a region is programmed.
OWNED_TRAIT_PREFIXES = ("OWNER_CYBORG", "CUSTOM_FPGA_", "CUSTOM_NVIDIA_",
                        "CUSTOM_GPU_", "CUSTOM_PCI_")

#: Traits the reporter owns by their whole name: what a NIC region's
#: handles are. While a document lists no handles for a region, they stay
#: as cyborg_lite set them from the handles its agent found in-band.
OWNED_TRAITS = frozenset((inventory.NIC_VF_TRAIT, inventory.NIC_PF_TRAIT))

#: Appended to a region provider's name while a provider the reporter does
#: not own holds the name: real Cyborg names a deployable's provider
#: ``<host>_<pci address>`` too, and Placement names are unique.
HELD_NAME_SUFFIX = "_ironic_accel"

#: Marks a provider the reporter kept with ``reserved = total`` because its
#: device vanished while allocations still used it.
RETIRED_TRAIT = "CUSTOM_ACCEL_RETIRED"


@dataclasses.dataclass(frozen=True)
class Provider:
    """One desired child provider (one region of one device)."""

    uuid: str
    name: str
    resource_class: str
    total: int
    traits: frozenset
    #: The function trait the document reports (set only when the provider
    #: carries no function trait yet), or None.
    function_trait: str | None
    device_id: str
    region_id: str
    #: None for a device the BMC describes without one (schema 1.1).
    pci_address: str | None
    #: False when the document lists no ``attach_handles`` for the region
    #: (out of band, before cyborg_lite's agent discovered them in-band).
    handles_known: bool = True


@dataclasses.dataclass(frozen=True)
class Tree:
    """The desired tree: parent host name and its accelerator children."""

    host: str
    providers: tuple

    def by_uuid(self):
        """``{uuid: Provider}``."""
        return {p.uuid: p for p in self.providers}


def vendor_name(device):
    """The vendor fragment of trait names (``INTEL``, ``XILINX``, ...).

    The name real Cyborg's drivers use for a known PCI vendor id; else the
    first word of ``vendor`` (BMCs say ``Intel(R) Corporation`` or
    ``Nvidia(R) Corporation``, which profiles know as ``INTEL`` and
    ``NVIDIA``); else the vendor id; else ``UNKNOWN``.
    """
    known = VENDOR_NAMES.get((device.get("vendor_id") or "").lower())
    if known:
        return known
    words = re.findall(r"[A-Za-z0-9]+", device.get("vendor") or "")
    if words:
        return inventory.trait_fragment(words[0])
    if device.get("vendor_id"):
        return _hex(device["vendor_id"])
    return "UNKNOWN"


def _hex(value):
    return value.lower().removeprefix("0x").upper()


def identity_traits(device, region=None):
    """The identity traits of one device's provider, as real Cyborg names them.

    :param device: a device of an inventory document.
    :param region: the region (its MDEV handles name vGPU types).
    :returns: a set of trait names, all valid os-traits names. A device
        the BMC describes without a product id (schema 1.1) gets no trait
        that names one.
    """
    vendor = vendor_name(device)
    product_id = (_hex(device["product_id"]) if device.get("product_id")
                  else None)
    traits = {os_traits.OWNER_CYBORG}
    if device["type"] == "FPGA":
        product = (inventory.trait_fragment(device["model"])
                   if device.get("model") else product_id)
        traits.add(f"CUSTOM_FPGA_{vendor}")
        if product:
            traits.add(f"CUSTOM_FPGA_{vendor}_{product}")
        if product_id:
            # NOTE(accel): Xilinx/Inspur drivers name the product by PCI
            # id; keeping both lets either kind of profile match.
            traits.add(f"CUSTOM_FPGA_PRODUCT_ID_{product_id}")
    elif device["type"] == "GPU" and vendor == "NVIDIA":
        if product_id:
            traits.add(f"CUSTOM_NVIDIA_{product_id}")
        for handle in (region or {}).get("attach_handles", []):
            if handle.get("mdev_type") and product_id:
                vgpu = inventory.trait_fragment(
                    handle["mdev_type"].removeprefix("nvidia-"))
                traits.add(f"CUSTOM_NVIDIA_{product_id}_{vgpu}")
    else:
        kind = "GPU" if device["type"] == "GPU" else "PCI"
        traits.add(f"CUSTOM_{kind}_{vendor}")
        if product_id:
            traits.add(f"CUSTOM_{kind}_PRODUCT_ID_{product_id}")
    if device["type"] == "NIC":
        traits |= nic_traits(device, region or {})
    for trait in traits:
        check_trait(trait)
    return traits


def nic_traits(device, region):
    """The traits a NIC region's handles give its provider, as real
    Cyborg's NIC driver names them: ``CUSTOM_VF`` (its handles are virtual
    functions) or ``CUSTOM_PF`` (the whole port), and ``CUSTOM_<PHYSNET>``
    of their physical network, so that a device profile asking for
    ``trait:CUSTOM_VF`` and ``trait:CUSTOM_PHYSNET1`` lands on a VF wired
    to physnet1. None while the region's handles are unknown.

    :param device: a NIC device of a valid inventory document.
    :param region: one of its regions.
    :returns: a set of trait names.
    """
    traits = set()
    for handle in region.get("attach_handles", []):
        if handle["type"] != "PCI":
            continue
        traits.add(inventory.nic_function(device, handle))
        if handle.get("physical_network"):
            traits.add(inventory.physnet_trait(handle["physical_network"]))
    return traits


def check_trait(name):
    """Raise InvalidTree unless ``name`` is a valid trait name."""
    if not _TRAIT_RE.match(name):
        raise exception.InvalidTree(
            f"trait {name!r} is not a valid trait name (upper case "
            "letters, digits and _ only)")
    if not os_traits.is_custom(name) and name not in _standard_traits():
        raise exception.InvalidTree(
            f"trait {name!r} is neither CUSTOM_ nor standard")
    return name


_STANDARD_TRAITS = set()


def _standard_traits():
    if not _STANDARD_TRAITS:
        _STANDARD_TRAITS.update(os_traits.get_traits())
    return _STANDARD_TRAITS


def is_standard_resource_class(name):
    """True for a resource class Placement knows without creating it."""
    return name in orc.STANDARDS


def provider_name(host, device, region):
    """``<host>_<pci address>[_<region>]`` (region only for multi-region).

    A device without a PCI address (schema 1.1) is named by its id
    instead, e.g. ``compute-1_gpu0``.
    """
    name = f"{host}_{device.get('pci_address') or device['id']}"
    if len(device["regions"]) > 1:
        name = f"{name}_{region['id']}"
    if len(name) > MAX_NAME_LENGTH:
        raise exception.InvalidTree(
            f"provider name {name!r} is longer than Placement's "
            f"{MAX_NAME_LENGTH} characters; shorten the host name")
    return name


def held_name(name):
    """The name a region's provider carries while another provider, not the
    reporter's, holds ``name``: ``name`` plus :data:`HELD_NAME_SUFFIX`,
    ``name`` cut short when both would pass Placement's limit.
    """
    return name[:MAX_NAME_LENGTH - len(HELD_NAME_SUFFIX)] + HELD_NAME_SUFFIX


def desired_tree(document):
    """The provider tree an inventory document asks for.

    :param document: an inventory document (validated here).
    :raises accel_common.exception.InvalidInventory: on a bad document.
    :raises accel_common.exception.InvalidTree: when a name or resource
        class cannot be reported.
    :returns: a :class:`Tree`.
    """
    inventory.validate(document)
    host = document["host"]
    providers = []
    for device in document["devices"]:
        for region in device["regions"]:
            rc = region["resource_class"]
            if not (is_standard_resource_class(rc) or orc.is_custom(rc)):
                raise exception.InvalidTree(
                    f"device {device['id']} region {region['id']}: resource "
                    f"class {rc!r} is neither standard nor CUSTOM_")
            function = None
            if region.get("function_id"):
                function = check_trait(inventory.function_trait(
                    vendor_name(device), region["function_id"]))
            providers.append(Provider(
                uuid=region["rp_uuid"],
                name=provider_name(host, device, region),
                resource_class=rc,
                total=len(region.get("attach_handles") or []) or 1,
                traits=frozenset(identity_traits(device, region)
                                 | {check_trait(t)
                                    for t in region.get("traits", [])}),
                function_trait=function,
                device_id=device["id"],
                region_id=region["id"],
                pci_address=device.get("pci_address"),
                handles_known="attach_handles" in region))
    return Tree(host=host, providers=tuple(providers))


def is_cyborg_provider(rp):
    """True for a provider real Cyborg made: its uuid is
    ``uuid3(NAMESPACE_DNS, name)``, the name ``<host>_<deployable name>``.

    It carries ``OWNER_CYBORG`` like the reporter's own, but it is Cyborg's
    (or, after ``cyborg-lite-manage cyborg import``, cyborg_lite's) to
    change, never the reporter's.
    """
    return rp["uuid"] == str(uuid.uuid3(uuid.NAMESPACE_DNS, rp["name"]))


def is_foreign_provider(rp, traits):
    """True for a provider that is not the reporter's: real Cyborg's (see
    :func:`is_cyborg_provider`) or one without ``OWNER_CYBORG`` (Nova's,
    Neutron's, an operator's).

    :param rp: the provider as Placement returns it.
    :param traits: its traits (iterable of names).
    """
    return is_cyborg_provider(rp) or os_traits.OWNER_CYBORG not in traits


def is_owned_trait(name):
    """True for a trait whose presence the reporter decides."""
    return name in OWNED_TRAITS or (
        name.startswith(OWNED_TRAIT_PREFIXES)
        and not name.startswith(inventory.FUNCTION_TRAIT_PREFIX))


def merge_traits(current, provider):
    """The trait set a provider should have, keeping what others own.

    Keeps every trait the reporter does not own (operator traits, function
    traits cyborg_lite set); replaces the owned ones with the desired
    identity traits; adds the document's function trait only when the
    provider has no function trait at all. A NIC region's
    ``CUSTOM_VF``/``CUSTOM_PF`` stays while the document lists no handles
    for it (cyborg_lite set it from the handles found in-band). A
    physical-network trait is never removed here: its name
    (``CUSTOM_PHYSNET1``) does not tell it from an operator's trait;
    cyborg_lite removes it when the region's handles leave that network.

    :param current: the provider's traits now (iterable of names).
    :param provider: the desired :class:`Provider`.
    :returns: a set of trait names.
    """
    current = set(current)
    merged = {t for t in current
              if not is_owned_trait(t) and t != RETIRED_TRAIT}
    if not provider.handles_known:
        merged |= current & OWNED_TRAITS
    merged |= provider.traits
    has_function = any(t.startswith(inventory.FUNCTION_TRAIT_PREFIX)
                       for t in current)
    if provider.function_trait and not has_function:
        merged.add(provider.function_trait)
    return merged


def merge_inventory(current, provider, revive=False):
    """The inventories a provider should have, keeping what others own.

    The reporter owns ``total`` and ``max_unit`` of the provider's resource
    class; ``reserved``, ``min_unit``, ``step_size`` and
    ``allocation_ratio`` keep their current values (cyborg_lite sets
    ``reserved`` while it programs a region). ``reserved`` is clamped to the
    new total, since Placement refuses ``reserved > total``. Another class
    left over from a changed document is dropped. When the document does
    not know the region's handles, an existing ``total``/``max_unit`` of
    the class is kept: cyborg_lite set it from the handles its agent
    discovered in-band, and resetting it to 1 would fight that writer; so
    is the provider's one class when it is another (cyborg_lite set the
    class the operator's device spec names).

    :param current: ``{rc: inventory dict}`` as Placement returns it.
    :param provider: the desired :class:`Provider`.
    :param revive: the reporter itself set ``reserved`` when the device
        vanished (the provider carries :data:`RETIRED_TRAIT`) and the device
        is back: ``reserved`` returns to 0.
    :returns: ``{rc: inventory dict}``.
    """
    resource_class = provider.resource_class
    if (not provider.handles_known and len(current) == 1
            and resource_class not in current):
        # NOTE(accel): cyborg_lite gave the region the class the
        # operator's device spec names, with the handles found in-band.
        (resource_class,) = current
    old = dict(current.get(resource_class) or {})
    record = {key: old[key] for key in
              ("reserved", "min_unit", "step_size", "allocation_ratio")
              if key in old}
    if revive:
        record["reserved"] = 0
    total = max_unit = provider.total
    if not provider.handles_known and old.get("total"):
        total = old["total"]
        max_unit = min(old.get("max_unit") or total, total)
    record["total"] = total
    record["max_unit"] = max_unit
    if record.get("reserved", 0) > total:
        record["reserved"] = total
    return {resource_class: record}


def inventory_equal(current, desired):
    """True when Placement's inventories already hold ``desired``."""
    if set(current) != set(desired):
        return False
    for rc, record in desired.items():
        for key, value in record.items():
            if current[rc].get(key) != value:
                return False
    return True
