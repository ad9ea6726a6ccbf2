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

"""A vGPU in a Cyborg 17 database, as real Cyborg's NVIDIA driver stores it.

The recording has no GPU (its agent ran the fake driver). :func:`add`
appends to recorded rows what Cyborg 17 writes for an NVIDIA card with one
enabled vGPU type (``cyborg/accelerator/drivers/gpu/nvidia/sysinfo.py``):
a ``GPU`` device, its ``PCI`` controlpath id, one deployable named
``<host>_<address>`` with ``num_accelerators`` the possible instances, its
``rc`` ``VGPU`` and trait attributes, and one ``MDEV`` handle per possible
instance, ``attach_info`` as ``mdev_str_to_json`` writes it
(``vgpu_mark`` ``<type>_<n>``); then a profile asking one ``VGPU`` and one
Bound ARQ per instance named in ``bound``, as Cyborg's bind leaves them.
See SOURCES.rst.
"""

import json
import uuid

ADDRESS = "0000:af:00.0"
MDEV_TYPE = "nvidia-223"
PROFILE = "import-vgpu"
_WHEN = "2026-11-24T19:30:00"


def _next_id(rows, table):
    return max((r["id"] for r in rows.get(table, ())), default=0) + 1


def _row(rows, table, **values):
    values.setdefault("id", _next_id(rows, table))
    values.setdefault("uuid", str(uuid.uuid4()))
    values.setdefault("created_at", _WHEN)
    values.setdefault("updated_at", None)
    rows.setdefault(table, []).append(values)
    return values


def add(rows, host, instances=4, bound=(1, 3), project=None):
    """Add a vGPU with ``instances`` MDEV handles on ``host`` to ``rows``,
    handles ``bound`` (by instance) held by Bound ARQs of one instance
    each.

    :returns: ``{"rp_uuid", "deployable", "handles": [uuid by instance],
        "arqs": {arq uuid: handle uuid}, "instances": {instance uuid:
        arq uuid}, "info": {handle uuid: attach_info dict}}``.
    """
    domain, bus, rest = ADDRESS.split(":")
    slot, function = rest.split(".")
    device = _row(rows, "devices", type="GPU", vendor="10de",
                  model="Tesla T4", hostname=host, status="enabled",
                  device_state=None,
                  std_board_info=json.dumps({"product_id": "1eb8",
                                             "controller": "3D controller"}),
                  vendor_board_info=json.dumps({"vendor_info":
                                                "gpu_vb_info"}))
    cpid = _row(rows, "controlpath_ids", device_id=device["id"],
                cpid_type="PCI",
                cpid_info=json.dumps({"bus": bus, "device": slot,
                                      "domain": domain,
                                      "function": function}))
    name = f"{host}_{ADDRESS}"
    rp_uuid = str(uuid.uuid3(uuid.NAMESPACE_DNS, name))
    deployable = _row(rows, "deployables", parent_id=None, root_id=None,
                      name=name, num_accelerators=instances,
                      device_id=device["id"], rp_uuid=rp_uuid,
                      driver_name="NVIDIA", bitstream_id=None)
    for key, value in (("rc", "VGPU"), ("trait0", "OWNER_CYBORG"),
                       ("trait1", "CUSTOM_NVIDIA_1EB8_T4_2B")):
        _row(rows, "attributes", deployable_id=deployable["id"], key=key,
             value=value)
    handles, info = [], {}
    for num in range(instances):
        attach_info = {"asked_type": MDEV_TYPE, "bus": bus, "device": slot,
                       "domain": domain, "function": function,
                       "vgpu_mark": f"{MDEV_TYPE}_{num}"}
        handle = _row(rows, "attach_handles",
                      deployable_id=deployable["id"], cpid_id=cpid["id"],
                      in_use=num in bound, attach_type="MDEV",
                      attach_info=json.dumps(attach_info))
        handles.append(handle)
        info[handle["uuid"]] = attach_info
    profile = _row(rows, "device_profiles", name=PROFILE,
                   description="one vGPU",
                   profile_json=json.dumps({"groups": [
                       {"resources:VGPU": "1",
                        "trait:CUSTOM_NVIDIA_1EB8_T4_2B": "required"}]}))
    arqs, by_instance = {}, {}
    for num in bound:
        instance = str(uuid.uuid4())
        arq = _row(rows, "extended_accelerator_requests",
                   project_id=project, state="Bound",
                   device_profile_id=profile["id"],
                   device_profile_group_id=0, hostname=host,
                   device_rp_uuid=rp_uuid, instance_uuid=instance,
                   attach_handle_id=handles[num]["id"], substate="Initial",
                   deployable_id=deployable["id"])
        arqs[arq["uuid"]] = handles[num]["uuid"]
        by_instance[instance] = arq["uuid"]
    return {"rp_uuid": rp_uuid, "deployable": deployable["uuid"],
            "handles": [h["uuid"] for h in handles], "arqs": arqs,
            "instances": by_instance, "info": info}
