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

"""Handing an image to a BMC: the update methods DSP0266 describes
(``SimpleUpdate``, ``MultipartHttpPushUri``, ``HttpPushUri``), what a BMC
offers of them, and the task monitor each answers with."""

import dataclasses
import json

from ironic.common import exception
from ironic.common.i18n import _
from ironic.conf import CONF
from sushy.resources.updateservice import constants as up_cons

from ironic_accel import exception as accel_exception
from ironic_accel.redfish import client as bmc
from ironic_accel.redfish import private_api


def transfer_protocol(url):
    """The Redfish TransferProtocol (a sushy constant) for an image URL."""
    scheme = url.split(":", 1)[0].lower()
    try:
        return up_cons.UpdateTransferProtocolType(scheme.upper())
    except ValueError:
        raise exception.InvalidParameterValue(
            _("Unsupported image URL scheme %(scheme)r in %(url)s") %
            {"scheme": scheme, "url": url})


def simple_update(node, device, image_url, target):
    """Start ``SimpleUpdate`` of ``image_url`` on ``target``.

    :param device: the device id (for messages).
    :param target: the Processor or FirmwareInventory member URI; None for
        a BMC whose SimpleUpdate takes no Targets.
    :returns: the task monitor URI (from the Task body or, when the BMC
        answers 202 with only a ``Location``, from that header).
    """
    protocol = transfer_protocol(image_url)

    def post(client):
        monitor = client.update_service().simple_update(
            image_url, targets=[target] if target else None,
            transfer_protocol=protocol)
        return monitor.task_monitor_uri
    return bmc.call(node, device, "POST SimpleUpdate", post, idempotent=False)


#: How ``update_accelerator_firmware`` can hand an image to a BMC
#: (DSP0266 "Software update"): ``SimpleUpdate`` (the BMC downloads the
#: image), ``MultipartHttpPushUri`` (Redfish 1.6+: the image and its
#: ``UpdateParameters`` in one multipart/form-data POST) and ``HttpPushUri``
#: (targets set in ``HttpPushUriTargets``, then the image POSTed as is).
SIMPLE_UPDATE = "SimpleUpdate"
MULTIPART_PUSH = "MultipartHttpPushUri"
HTTP_PUSH = "HttpPushUri"
UPDATE_METHODS = (SIMPLE_UPDATE, MULTIPART_PUSH, HTTP_PUSH)


@dataclasses.dataclass
class UpdateOffer:
    """What a BMC's UpdateService offers for updates."""

    simple_update: str = None
    #: False when the SimpleUpdate ActionInfo lists no Targets parameter
    #: (the BMC ignores or refuses Targets); None when it does not say.
    simple_targets: bool = None
    multipart_uri: str = None
    http_push_uri: str = None
    http_push_targets: bool = False

    update_service_uri: str = None

    def methods(self):
        """The methods offered, most precise first: a push that takes
        Targets, SimpleUpdate with Targets, then the rest."""
        found = []
        if self.multipart_uri:
            found.append(MULTIPART_PUSH)
        if self.simple_update and self.simple_targets is not False:
            found.append(SIMPLE_UPDATE)
        if self.http_push_uri and self.http_push_targets:
            found.append(HTTP_PUSH)
        return found


def get_update_offer(node):
    """Read the UpdateService: the update methods and how they take
    targets.

    :raises: AcceleratorBMCError, BMCUnavailable.
    """
    def read(client):
        offer = UpdateOffer()
        path = (client.root.json.get('UpdateService') or {}).get(
            '@odata.id')
        if not path:
            return offer
        service = bmc.get_json(client, path)
        offer.update_service_uri = path
        action = (service.get('Actions') or {}).get(
            '#UpdateService.SimpleUpdate') or {}
        offer.simple_update = action.get('target')
        info_uri = action.get('@Redfish.ActionInfo')
        if offer.simple_update and info_uri:
            info = bmc.optional(node, f"GET {info_uri}", bmc.get_json, client,
                             info_uri)
            if info is not None:
                names = {p.get('Name') for p in info.get('Parameters') or ()}
                offer.simple_targets = 'Targets' in names
        offer.multipart_uri = service.get('MultipartHttpPushUri')
        offer.http_push_uri = service.get('HttpPushUri')
        offer.http_push_targets = 'HttpPushUriTargets' in service
        return offer
    return bmc.call(node, None, "GET UpdateService", read)


def choose_update_method(node, offer, forced=None):
    """The method to update with: ``forced`` when the BMC offers it, else
    the first of :meth:`UpdateOffer.methods`.

    :raises: InvalidParameterValue saying what the BMC offers.
    """
    offered = offer.methods()
    if forced and forced != "auto":
        if forced == SIMPLE_UPDATE and offer.simple_update:
            return forced
        if forced in offered:
            return forced
        raise exception.InvalidParameterValue(
            _("Node %(node)s: update method %(method)s was asked for but "
              "its BMC offers %(offered)s") %
            {"node": node.uuid, "method": forced,
             "offered": ", ".join(offered) or "no update method"})
    if not offered:
        raise exception.InvalidParameterValue(
            _("Node %(node)s: its BMC offers no update method that can aim "
              "at one device (SimpleUpdate %(simple)s, no push URI taking "
              "targets); set update_method=SimpleUpdate if its images name "
              "their device themselves") %
            {"node": node.uuid,
             "simple": "without Targets" if offer.simple_update
             else "absent"})
    return offered[0]


def _monitor_of(response, action_uri):
    """The task monitor a BMC answered an update with: a Location header
    (202 with or without a body), else the Task body's own URI."""
    location = response.headers.get('Location')
    if location:
        return location
    try:
        body = response.json()
    except ValueError:
        body = {}
    monitor = body.get('TaskMonitor') or body.get('@odata.id')
    if not monitor:
        raise accel_exception.AcceleratorBMCError(
            node="-", device="-",
            reason=f"the BMC accepted the update at {action_uri} but gave "
                   f"neither a Location nor a task (status "
                   f"{response.status_code})")
    return monitor


def push_update(node, device, method, offer, image_path, target):
    """Hand the image at ``image_path`` (downloaded and checked by the
    conductor) to the BMC with a push method.

    :returns: the task monitor URI.
    """
    def post(client):
        with open(image_path, 'rb') as image:
            if method == MULTIPART_PUSH:
                parameters = {"Targets": [target],
                              "@Redfish.OperationApplyTime": "Immediate"}
                response = client.connector.post(
                    offer.multipart_uri, headers={'Content-Type': None},
                    files={'UpdateParameters': (
                        None, json.dumps(parameters), 'application/json'),
                        'UpdateFile': ('image.bin', image,
                                       'application/octet-stream')})
                return _monitor_of(response, offer.multipart_uri)
            client.connector.patch(offer.update_service_uri,
                                   data={'HttpPushUriTargets': [target]})
            # NOTE(ironic-accel): the image is the raw request body, which
            # sushy's connector (JSON bodies and forms only) cannot send.
            response = private_api.post_raw(
                client.connector, offer.http_push_uri, image,
                headers={'Content-Type': 'application/octet-stream',
                         'OData-Version': '4.0'},
                timeout=CONF.ironic_accel.image_download_timeout)
            return _monitor_of(response, offer.http_push_uri)
    return bmc.call(node, device, f"POST {method}", post, idempotent=False)

