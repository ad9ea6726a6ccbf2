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

"""The plugin's client of cyborg_lite's v2 API, through a keystoneauth
adapter built from ``[cyborg]`` (as Nova's ``nova.accelerator.cyborg``).

Only the calls Nova makes, plus the two inventory reads the ResourceSlices
need: devices of a host and deployables (followed across pages).
"""

import json
import urllib.parse

from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1 import loading as ks_loading
from keystoneauth1 import noauth
from keystoneauth1 import service_token

from cyborg_lite_dra.conf import cyborg as cyborg_conf

#: ARQ states (cyborg_lite's arq_states, as the wire shows them).
BOUND = "Bound"
BIND_FAILED = "BindFailed"
DELETING = "Deleting"
RESOLVED = (BOUND, BIND_FAILED, DELETING)
BINDABLE = ("Initial", "Unbound")

#: The microversion the inventory reads ask for: devices carry ``status``
#: (``enabled`` or ``maintaining``, from 2.3) and ``health`` (the BMC's
#: ``OK``, ``Warning`` or ``Critical``, from 2.4), deployables ``state``
#: (``ready``, ``programming`` or ``error``, from 2.4).
INVENTORY_VERSION = {"OpenStack-API-Version": "accelerator 2.4"}


class CyborgError(Exception):
    """A cyborg_lite call failed; the message says which and why."""

    def __init__(self, what, status=None, detail=""):
        self.status = status
        super().__init__(f"cyborg_lite {what} failed"
                         + (f" ({status})" if status else "")
                         + (f": {detail}" if detail else ""))


def _detail(response):
    try:
        body = response.json()
    except ValueError:
        return response.text[:300]
    if isinstance(body, dict) and "error_message" in body:
        message = body["error_message"]
        try:
            # NOTE(dra): Cyborg's envelope nests a JSON document as a string.
            message = json.loads(message).get("faultstring", message)
        except (TypeError, ValueError, AttributeError):
            pass
        return str(message)
    return json.dumps(body)[:300]


class Client:
    """cyborg_lite's v2 API for one plugin.

    :param conf: the plugin's ConfigOpts (``[cyborg]`` registered).
    :param timeout: seconds per HTTP request.
    """

    def __init__(self, conf, timeout=10.0):
        group = cyborg_conf.GROUP
        auth = ks_loading.load_auth_from_conf_options(conf, group)
        if auth is not None and not isinstance(auth, noauth.NoAuth):
            # NOTE(dra): cyborg_lite binds, unbinds and deletes by instance
            # only for a caller with a service token (as Nova sends with
            # [service_user]); the plugin is its own service user, so its
            # token goes as both.
            auth = service_token.ServiceTokenAuthWrapper(user_auth=auth,
                                                         service_auth=auth)
        session = ks_loading.load_session_from_conf_options(
            conf, group, auth=auth)
        self._adapter = ks_loading.load_adapter_from_conf_options(
            conf, group, session=session, auth=auth,
            service_type=conf[group].service_type)
        self._timeout = timeout

    def _call(self, what, method, path, expect, **kwargs):
        try:
            response = self._adapter.request(
                path, method, raise_exc=False, timeout=self._timeout,
                **kwargs)
        except ks_exceptions.ClientException as error:
            raise CyborgError(what, detail=str(error)) from error
        if response.status_code not in expect:
            raise CyborgError(what, response.status_code, _detail(response))
        return response

    def _pages(self, what, path, key, headers=None):
        items = []
        while path:
            body = self._call(what, "GET", path, (200,),
                              headers=headers).json()
            items.extend(body.get(key, []))
            path = next((link["href"] for link in body.get(f"{key}_links", [])
                         if link.get("rel") == "next"), None)
            if path:
                # NOTE(dra): the next link is absolute; the adapter takes a
                # path relative to its endpoint, which ends in /v2.
                parts = urllib.parse.urlsplit(path)
                path = parts.path.rsplit("/", 1)[-1] + "?" + parts.query
        return items

    def devices(self, hostname):
        """The devices of ``hostname``, with their ``status`` and
        ``health`` (microversion 2.4)."""
        query = urllib.parse.urlencode({"hostname": hostname})
        return self._pages("listing devices", f"/devices?{query}", "devices",
                           headers=INVENTORY_VERSION)

    def deployables(self):
        """Every deployable (regions and whole cards), with its ``state``
        (microversion 2.4)."""
        return self._pages("listing deployables", "/deployables",
                           "deployables", headers=INVENTORY_VERSION)

    def create_arqs(self, device_profile):
        """POST /accelerator_requests; returns the new ARQs."""
        response = self._call(
            f"creating accelerator requests of device profile "
            f"{device_profile!r}", "POST", "/accelerator_requests",
            (201,), json={"device_profile_name": device_profile})
        return response.json()["arqs"]

    def bind(self, bindings):
        """Bind ARQs, Nova's PATCH.

        :param bindings: ``{arq uuid: (hostname, device_rp_uuid,
            instance_uuid)}``.
        """
        body = {arq: [{"op": "add", "path": "/hostname", "value": host},
                      {"op": "add", "path": "/device_rp_uuid", "value": rp},
                      {"op": "add", "path": "/instance_uuid",
                       "value": instance}]
                for arq, (host, rp, instance) in bindings.items()}
        self._call("binding accelerator requests", "PATCH",
                   "/accelerator_requests", (202,), json=body)

    def arqs_of(self, instance_uuid):
        """The ARQs bound to ``instance_uuid`` (any state)."""
        query = urllib.parse.urlencode({"instance": instance_uuid})
        return self._pages(f"reading the accelerator requests of "
                           f"{instance_uuid}",
                           f"/accelerator_requests?{query}", "arqs")

    def arq(self, arq_uuid):
        """One ARQ, or None when cyborg_lite does not have it."""
        response = self._call(f"reading accelerator request {arq_uuid}",
                              "GET", f"/accelerator_requests/{arq_uuid}",
                              (200, 404))
        return response.json() if response.status_code == 200 else None

    def delete_instance(self, instance_uuid):
        """Delete every ARQ of ``instance_uuid`` (none is fine)."""
        query = urllib.parse.urlencode({"instance": instance_uuid})
        self._call(f"deleting the accelerator requests of {instance_uuid}",
                   "DELETE", f"/accelerator_requests?{query}", (204,))

    def delete_arqs(self, arq_uuids):
        """Delete ARQs by uuid in one call; those already gone are fine
        (cyborg_lite deletes the others and answers 404 naming them)."""
        arq_uuids = list(arq_uuids)
        # NOTE(dra): cyborg_lite caps the ARQs one call names
        # ([api] max_arqs_per_request, 64 by default).
        for start in range(0, len(arq_uuids), 32):
            query = urllib.parse.urlencode(
                {"arqs": ",".join(arq_uuids[start:start + 32])})
            self._call("deleting accelerator requests", "DELETE",
                       f"/accelerator_requests?{query}", (204, 404))
