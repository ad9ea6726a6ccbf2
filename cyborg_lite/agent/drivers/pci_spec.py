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

"""The operator's words for the ``pci`` driver, in the syntax they know.

``[pci] device_spec`` is Nova's ``[pci] device_spec``: each value a JSON
object (or a list of them) with ``vendor_id``, ``product_id`` (hex, ``*``
for any), ``address`` (glob ``[[[[<domain>]:]<bus>]:][<slot>][.[<function>]]``
or a dict of regular expressions per field) or ``devname`` (a netdev), and
the tags ``physical_network``, ``resource_class`` and ``traits`` (comma
separated, normalized as Nova does). ``device_type`` (one of Cyborg's
device types) overrides the type the PCI class gives. As in Nova, a spec
whose address is one physical function also matches that PF's VFs.

``[pci] physical_device_mappings`` is Neutron's SR-IOV agent syntax,
``<physnet>:<PF netdev>`` items.

Parsing is pure: each bad value gives one message naming what is wrong
(:class:`InvalidSpec`), never an exception out of the driver.
"""

import copy
import json
import re

import os_resource_classes as orc
import os_traits

from accel_common import inventory

ANY = "*"

#: Nova's tags that mean something to Nova or Neutron only; accepted (a spec
#: copied from nova.conf keeps working) and ignored here.
IGNORED_TAGS = ("trusted", "remote_managed", "managed", "live_migratable",
                "one_time_use")

KEYS = ("vendor_id", "product_id", "address", "devname",
        "physical_network", "resource_class", "traits", "device_type")

#: Largest value of each PCI address field (as Nova checks them).
_MAX = {"domain": 0xFFFF, "bus": 0xFF, "slot": 0x1F, "function": 0x7}
_WIDTH = {"domain": 4, "bus": 2, "slot": 2, "function": 1}
_FIELDS = ("domain", "bus", "slot", "function")
_BDF = re.compile(r"^([0-9a-f]{4}):([0-9a-f]{2}):([0-9a-f]{2})\.([0-7])$")


class InvalidSpec(ValueError):
    """A value of ``[pci] device_spec`` or ``physical_device_mappings``
    that cannot be used; the message says what is wrong."""


def _fields(bdf):
    match = _BDF.match(bdf.lower())
    return dict(zip(_FIELDS, match.groups())) if match else None


def _hex_field(name, value, maximum, width):
    if value == ANY:
        return ANY
    try:
        number = int(value, 16)
    except ValueError:
        raise InvalidSpec(f"address {name} {value!r} is not a hex number")
    if number > maximum:
        raise InvalidSpec(f"address {name} {value!r} is greater than "
                          f"{maximum:x}")
    return f"{number:0{width}x}"


class Address:
    """The ``address`` of a spec: glob (a string) or regex (a dict)."""

    def __init__(self, value):
        if isinstance(value, str):
            self._parts = self._glob(value)
            self._regex = None
        elif isinstance(value, dict):
            unknown = sorted(set(value) - set(_FIELDS))
            if unknown:
                raise InvalidSpec(f"address has unknown field(s) "
                                  f"{', '.join(unknown)} (known: "
                                  f"{', '.join(_FIELDS)})")
            self._parts = None
            self._regex = {}
            for field in _FIELDS:
                pattern = value.get(field, ".*")
                if not isinstance(pattern, str):
                    raise InvalidSpec(f"address {field} must be a string")
                try:
                    self._regex[field] = re.compile(pattern)
                except re.error as exc:
                    raise InvalidSpec(f"address {field} {pattern!r} is not "
                                      f"a regular expression: {exc}")
        else:
            raise InvalidSpec("address must be a string (glob) or an "
                              "object of regular expressions")

    @staticmethod
    def _glob(text):
        dbs, _, function = text.strip().partition(".")
        parts = dict.fromkeys(_FIELDS, ANY)
        if function.strip():
            parts["function"] = _hex_field("function", function.strip(),
                                           _MAX["function"], 1)
        if dbs:
            fields = dbs.split(":")
            if len(fields) > 3:
                raise InvalidSpec(f"address {text!r} has more than three "
                                  f"':'-separated fields before the '.'")
            fields = [ANY] * (3 - len(fields)) + fields
            for name, value in zip(_FIELDS, fields):
                parts[name] = _hex_field(name, value.strip() or ANY,
                                         _MAX[name], _WIDTH[name])
        return parts

    @property
    def single(self):
        """The one BDF this address names, else None."""
        if self._parts and ANY not in self._parts.values():
            return "{domain}:{bus}:{slot}.{function}".format(**self._parts)
        return None

    def match(self, bdf):
        """True when ``bdf`` (``dddd:bb:ss.f``) is one of this address's."""
        fields = _fields(bdf)
        if fields is None:
            return False
        if self._regex is not None:
            return all(self._regex[f].match(fields[f]) for f in _FIELDS)
        return all(self._parts[f] in (ANY, fields[f]) for f in _FIELDS)


def _normalized(kind, value, standard):
    """A standard name as it is, else Nova's custom spelling: upper case,
    runs of other characters ``_``, ``CUSTOM_`` prefixed unless there."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidSpec(f"{kind} must be a non-empty string")
    value = value.strip()
    if value in standard:
        return value
    name = re.sub(r"[^A-Z0-9_]+", "_", value.upper())
    return name if name.startswith("CUSTOM_") else f"CUSTOM_{name}"


def _standard_traits():
    return set(os_traits.get_traits())


class DeviceSpec:
    """One object of ``[pci] device_spec``.

    :raises InvalidSpec: naming the key that is wrong.
    """

    def __init__(self, spec, text=None):
        if not isinstance(spec, dict):
            raise InvalidSpec("each device spec must be a JSON object")
        self.text = text or json.dumps(spec, sort_keys=True)
        unknown = sorted(set(spec) - set(KEYS) - set(IGNORED_TAGS))
        if unknown:
            raise InvalidSpec(f"unknown key(s) {', '.join(unknown)} (known: "
                              f"{', '.join(KEYS + IGNORED_TAGS)})")
        self.vendor_id = self._pci_id(spec, "vendor_id")
        self.product_id = self._pci_id(spec, "product_id")
        if "address" in spec and "devname" in spec:
            raise InvalidSpec("address and devname exclude each other")
        self.devname = spec.get("devname")
        if self.devname is not None and (not isinstance(self.devname, str)
                                         or not self.devname.strip()):
            raise InvalidSpec("devname must be a netdev name")
        self.address = (Address(spec.get("address", "*:*:*.*"))
                        if self.devname is None else None)
        self.physical_network = spec.get("physical_network")
        if self.physical_network is not None and (
                not isinstance(self.physical_network, str)
                or not self.physical_network.strip()):
            raise InvalidSpec("physical_network must be a non-empty string")
        self.resource_class = None
        if "resource_class" in spec:
            self.resource_class = _normalized(
                "resource_class", spec["resource_class"], orc.STANDARDS)
        self.traits = ()
        if "traits" in spec:
            if not isinstance(spec["traits"], str):
                raise InvalidSpec("traits must be a comma separated string")
            standard = _standard_traits()
            self.traits = tuple(sorted({
                _normalized("traits", name, standard)
                for name in spec["traits"].split(",") if name.strip()}))
        self.device_type = spec.get("device_type")
        if (self.device_type is not None
                and self.device_type not in inventory.DEVICE_TYPES):
            raise InvalidSpec(f"device_type {self.device_type!r} is not one "
                              f"of {', '.join(inventory.DEVICE_TYPES)}")

    @staticmethod
    def _pci_id(spec, key):
        value = spec.get(key, ANY)
        if not isinstance(value, str):
            raise InvalidSpec(f"{key} must be a string of hex digits")
        value = value.strip()
        if value == ANY:
            return ANY
        try:
            number = int(value, 16)
        except ValueError:
            raise InvalidSpec(f"{key} {value!r} is not a hex number")
        if number > 0xFFFF:
            raise InvalidSpec(f"{key} {value!r} is greater than ffff")
        return f"0x{number:04x}"

    def resolved(self, bdf):
        """This spec with its ``devname`` replaced by the address of the
        function that has the netdev."""
        spec = copy.copy(self)
        spec.devname, spec.address = None, Address(bdf)
        return spec

    def match(self, bdf, vendor_id, product_id, physfn=None):
        """True when the function ``bdf`` (ids as ``0x....``) is one of
        this spec's; a VF matches through its PF ``physfn`` too when the
        address names that one PF."""
        if self.address is None:
            return False
        if self.vendor_id not in (ANY, vendor_id.lower()):
            return False
        if self.product_id not in (ANY, product_id.lower()):
            return False
        if physfn and self.address.single == physfn.lower():
            return True
        return self.address.match(bdf)

    def __str__(self):
        return self.text


def parse_device_specs(values):
    """Read ``[pci] device_spec``.

    :param values: the option's values (JSON object or list per value).
    :returns: ``(specs, errors)``: the usable :class:`DeviceSpec` objects in
        order, and one message per value (or list item) that is not usable.
    """
    specs, errors = [], []
    for value in values:
        try:
            loaded = json.loads(value)
        except ValueError as exc:
            errors.append(f"[pci] device_spec {value!r} is not JSON: {exc}")
            continue
        items = loaded if isinstance(loaded, list) else [loaded]
        for item in items:
            text = json.dumps(item, sort_keys=True)
            try:
                specs.append(DeviceSpec(item, text))
            except InvalidSpec as exc:
                errors.append(f"[pci] device_spec {text} is ignored: {exc}")
    return specs, errors


def parse_physical_device_mappings(values):
    """Read ``[pci] physical_device_mappings`` (``physnet:netdev`` items).

    :returns: ``(mapping, errors)``: PF netdev name -> physical network,
        and one message per item that is not usable (a netdev mapped to two
        networks keeps the first).
    """
    mapping, errors = {}, []
    for item in values:
        physnet, sep, netdev = item.partition(":")
        physnet, netdev = physnet.strip(), netdev.strip()
        if not sep or not physnet or not netdev or ":" in netdev:
            errors.append(f"[pci] physical_device_mappings item {item!r} is "
                          f"ignored: expected <physical_network>:<PF netdev>")
            continue
        if netdev in mapping and mapping[netdev] != physnet:
            errors.append(f"[pci] physical_device_mappings item {item!r} is "
                          f"ignored: {netdev} is mapped to "
                          f"{mapping[netdev]} already")
            continue
        mapping[netdev] = physnet
    return mapping, errors
