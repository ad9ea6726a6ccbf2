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


"""Devices: /v2/devices, enable and disable (with Placement ``reserved``,
see :mod:`cyborg_lite.maintenance`)."""

import json

import flask

from cyborg_lite import exception
from cyborg_lite import maintenance
from cyborg_lite import policy
from cyborg_lite import states
from cyborg_lite.api import common
from cyborg_lite.api import microversion
from cyborg_lite.db import devices as device_db
from cyborg_lite.db import engine as db_engine
from cyborg_lite.programming import providers as region_providers


def serialize(device):
    """The wire form; ``status`` from microversion 2.3, ``health`` (what
    the BMC last reported, None when nothing) from 2.4."""
    body = {"uuid": device.uuid, "type": device.type,
            "vendor": device.vendor, "model": device.model,
            "std_board_info": json.dumps(device.std_board_info),
            "vendor_board_info": device.vendor_board_info,
            "hostname": device.hostname,
            "created_at": common.timestamp(device.created_at),
            "updated_at": common.timestamp(device.updated_at),
            "links": common.link("devices", device.uuid)}
    if common.version() >= microversion.Version("2.3"):
        body["status"] = device.status
    if common.version() >= microversion.Version("2.4"):
        body["health"] = device.health
    return body


def _authorize(action):
    svc = common.services()
    policy.authorize(svc.enforcer, f"cyborg:device:{action}",
                     common.context())
    return svc


def _uuid(uuid):
    if not db_engine.is_uuid_like(uuid):
        raise exception.DeviceNotFound(ident=uuid)
    return uuid


def list_devices():
    """GET /v2/devices[?type=&vendor=&hostname=&limit=&marker=]"""
    svc = _authorize("get_all")
    params = common.query(("type", "vendor", "hostname", "limit", "marker"))
    limit, marker = common.pagination(params)
    devices = device_db.get_all(svc.db, type=params.get("type"),
                                 vendor=params.get("vendor"),
                                 hostname=params.get("hostname"),
                                 limit=limit, marker=marker)
    return common.listing("devices", devices,
                          [serialize(d) for d in devices])


def show(uuid):
    """GET /v2/devices/{uuid}"""
    svc = _authorize("get_one")
    common.query(())
    return flask.jsonify(serialize(device_db.get(svc.db, _uuid(uuid))))


def _providers(svc):
    """Who writes ``reserved``: the programmer's Placement client when the
    app has one, else one kept for the app's life."""
    providers = getattr(svc.programmer, "providers", None)
    if providers is None:
        providers = flask.current_app.extensions.get("cyborg_lite_providers")
        if providers is None:
            providers = region_providers.RegionProviders(svc.conf)
            flask.current_app.extensions["cyborg_lite_providers"] = providers
    return providers


def enable(uuid):
    """POST /v2/devices/{uuid}/enable: binds may land on it again and
    Placement ``reserved`` goes back to 0."""
    svc = _authorize("enable")
    common.query(())
    maintenance.set_status(svc.db, _uuid(uuid),
                           states.DeviceStatus.ENABLED,
                           providers=_providers(svc))
    return common.empty(200)


def disable(uuid):
    """POST /v2/devices/{uuid}/disable: no new binds (``maintaining``) and
    Placement ``reserved = total``."""
    svc = _authorize("disable")
    common.query(())
    maintenance.set_status(svc.db, _uuid(uuid),
                           states.DeviceStatus.MAINTAINING,
                           providers=_providers(svc))
    return common.empty(200)
