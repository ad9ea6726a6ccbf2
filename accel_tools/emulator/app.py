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


"""The WSGI app of the Redfish BMC emulator.

Every /redfish request goes through the same gate, in this order: record it
(if it modifies something), answer 503 while the ``unavailable_seconds``
fault lasts, check authentication (Basic or a session's ``X-Auth-Token``;
the service root and session creation are public), then move update tasks
forward to the current time. The route table below lists every endpoint.
"""

import base64
import email.utils
import json
import math
import os
import secrets
import time
import uuid

import flask
from werkzeug import exceptions as wz_exc

from accel_tools.emulator import devices
from accel_tools.emulator import exception
from accel_tools.emulator import faults
from accel_tools.emulator import images
from accel_tools.emulator import network
from accel_tools.emulator import resources as res
from accel_tools.emulator import state as st

V1 = res.V1
TRANSFER_PROTOCOLS = ("CIFS", "FTP", "SFTP", "HTTP", "HTTPS", "NSF", "SCP", "TFTP",
                      "OEM", "NFS")
#: Seconds a client should wait between task monitor polls.
RETRY_AFTER = 1
_PUBLIC = {("GET", "/redfish"), ("GET", V1), ("GET", V1 + "/"),
           ("POST", V1 + "/SessionService/Sessions")}
_MODIFYING = ("POST", "PATCH", "PUT", "DELETE")


def _state():
    return flask.current_app.extensions["ironic_accel_emulator"]


def _reply(doc, status=200, headers=None):
    rsp = flask.jsonify(doc)
    rsp.status_code = status
    rsp.headers["OData-Version"] = "4.0"
    for key, value in (headers or {}).items():
        rsp.headers[key] = value
    return rsp


def _retry_after():
    # NOTE(emulator): an HTTP-date rather than delta-seconds: sushy 5.14's
    # TaskMonitor.sleep_for returns a digits-only header as a str, which
    # breaks its own wait(); a date comes back as float seconds.
    now = _state().clock()
    return email.utils.formatdate(math.ceil(now) + RETRY_AFTER, usegmt=True)


def _json_body():
    body = flask.request.get_json(silent=True)
    if not isinstance(body, dict):
        raise exception.BadRequest("The request body must be a JSON object", "MalformedJSON")
    return body


def _device(sid, did):
    dev = _state().device(sid, did)
    if dev["type"] == "CPU":
        raise exception.NotFound("PCIe device %s" % did)
    return dev


# Handlers, in route table order.

def get_version():
    return _reply({"v1": V1 + "/"})


def get_root():
    return _reply(res.service_root())


def get_systems():
    return _reply(res.system_collection(_state().snapshot()))


def get_system(sid):
    return _reply(res.system(sid, _state().system(sid)))


def patch_system(sid):
    body = _json_body()
    unknown = sorted(set(body) - {"Boot"})
    if unknown:
        raise exception.BadRequest("Property %s is not writable" % unknown[0],
                            "PropertyNotWritable", [unknown[0]])
    boot = body.get("Boot", {})
    allowed = {"BootSourceOverrideTarget": res.BOOT_TARGETS,
               "BootSourceOverrideEnabled": res.BOOT_ENABLED,
               "BootSourceOverrideMode": res.BOOT_MODES}
    if not isinstance(boot, dict):
        raise exception.BadRequest("Boot must be an object", "PropertyValueTypeError",
                            [str(boot), "Boot"])
    for key, value in boot.items():
        if key not in allowed:
            raise exception.BadRequest("Property Boot/%s is unknown" % key, "PropertyUnknown",
                                ["Boot/" + key])
        if value not in allowed[key]:
            raise exception.BadRequest("The value %s for the property %s is not in the list of "
                                "acceptable values" % (value, key),
                                "PropertyValueNotInList", [str(value), key])
    _state().set_boot(sid, boot.get("BootSourceOverrideTarget"),
                      boot.get("BootSourceOverrideEnabled"),
                      boot.get("BootSourceOverrideMode"))
    return get_system(sid)


def reset_system(sid):
    _state().system(sid)
    body = _json_body()
    if "ResetType" not in body:
        raise exception.BadRequest("The action ComputerSystem.Reset requires the parameter "
                            "ResetType", "ActionParameterMissing",
                            ["ComputerSystem.Reset", "ResetType"])
    _state().reset_system(sid, body["ResetType"])
    return "", 204


def get_processors(sid):
    return _reply(res.processor_collection(sid, _state().system(sid)))


def get_processor(sid, did):
    dev = _state().device(sid, did)
    if devices.is_nic(dev):
        raise exception.NotFound("Processor %s of system %s" % (did, sid))
    return _reply(res.processor(sid, dev))


def _fpga(sid, did):
    dev = _state().device(sid, did)
    if dev["type"] != "FPGA":
        raise exception.NotFound("AccelerationFunctions of %s" % did)
    return dev


def get_functions(sid, did):
    return _reply(res.acceleration_function_collection(sid, _fpga(sid, did)))


def get_function(sid, did, slot_id):
    dev = _fpga(sid, did)
    for slot in dev["slots"]:
        if slot["id"] == slot_id and slot["function_id"]:
            return _reply(res.acceleration_function(sid, dev, slot))
    raise exception.NotFound("AccelerationFunction %s of %s" % (slot_id, did))


def get_chassis_collection():
    return _reply(res.chassis_collection(_state().snapshot()))


def get_chassis(sid):
    _state().system(sid)
    return _reply(res.chassis(sid))


def get_pcie_devices(sid):
    return _reply(res.pcie_device_collection(sid, _state().system(sid)))


def get_pcie_device(sid, did):
    return _reply(res.pcie_device(sid, _device(sid, did)))


def get_pcie_functions(sid, did):
    return _reply(res.pcie_function_collection(sid, _device(sid, did)))


def get_pcie_function(sid, did, fid):
    dev = _device(sid, did)
    for fn in dev["functions"]:
        if str(fn["id"]) == fid:
            return _reply(res.pcie_function(sid, dev, fn))
    raise exception.NotFound("PCIe function %s of %s" % (fid, did))


def get_network_adapters(sid):
    return _reply(network.adapter_collection(sid, _state().system(sid)))


def get_network_adapter(sid, did):
    return _reply(network.adapter(sid, _state().nic(sid, did)))


def get_network_device_functions(sid, did):
    return _reply(network.device_function_collection(sid, _state().nic(sid, did)))


def get_network_device_function(sid, did, fid):
    return _reply(network.device_function(sid, _state().nic(sid, did), fid))


def get_managers():
    return _reply(res.manager_collection())


def get_manager(mid):
    if mid != res.MANAGER_ID:
        raise exception.NotFound("Manager %s" % mid)
    return _reply(res.manager(_state().snapshot()))


def _profile():
    return flask.current_app.config["EMULATOR_UPDATE_PROFILE"]


def get_update_service():
    return _reply(res.update_service(
        _profile(), flask.current_app.config["EMULATOR_PUSH_TARGETS"]))


def get_simple_update_action_info():
    if not res.has_simple_update(_profile()):
        raise exception.NotFound("ActionInfo SimpleUpdateActionInfo")
    return _reply(res.simple_update_action_info(_profile()))


def patch_update_service():
    """Set ``HttpPushUriTargets`` (httppush profile)."""
    body = _json_body()
    targets = body.get("HttpPushUriTargets")
    if _profile() != "httppush" or set(body) != {"HttpPushUriTargets"}:
        raise exception.BadRequest(
            "Only HttpPushUriTargets can be changed, and only on a BMC "
            "with an HttpPushUri", "PropertyNotWritable",
            [", ".join(sorted(body)) or "-"])
    if not isinstance(targets, list) or not all(
            isinstance(t, str) for t in targets):
        raise exception.BadRequest("HttpPushUriTargets must be a list of URIs",
                                   "PropertyValueTypeError",
                                   [str(targets), "HttpPushUriTargets"])
    for target in targets:
        _state().resolve_target(target)
    flask.current_app.config["EMULATOR_PUSH_TARGETS"] = list(targets)
    return _reply(res.update_service(_profile(), targets))


def _save_upload(content):
    if len(content) > images.MAX_IMAGE_BYTES:
        raise exception.BadRequest("The image is larger than %d bytes"
                                   % images.MAX_IMAGE_BYTES, "PayloadTooLarge")
    directory = flask.current_app.config["EMULATOR_UPLOADS"]
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "%s.bin" % uuid.uuid4().hex)
    with open(path, "wb") as handle:
        handle.write(content)
    return "file://" + path


def _push_task(image_uri, targets, action):
    if not targets:
        raise exception.BadRequest(
            "%s needs Targets (the Processor or FirmwareInventory URI to "
            "update)" % action, "ActionParameterMissing", [action, "Targets"])
    state = _state()
    tid = state.create_task(image_uri, targets, None)
    return _reply(res.task(state, state.task(tid)), 202,
                  {"Location": res.task_monitor_uri(tid),
                   "Retry-After": _retry_after()})


def multipart_push():
    """``MultipartHttpPushUri``: ``UpdateParameters`` (JSON) and
    ``UpdateFile`` parts in one multipart/form-data POST."""
    if _profile() not in ("multipart", "simple-no-targets"):
        raise exception.NotFound("MultipartHttpPushUri")
    action = "MultipartHttpPushUri"
    raw = flask.request.form.get("UpdateParameters")
    if raw is None and "UpdateParameters" in flask.request.files:
        raw = flask.request.files["UpdateParameters"].read().decode()
    upload = flask.request.files.get("UpdateFile")
    if raw is None or upload is None:
        raise exception.BadRequest(
            "A multipart update needs the parts UpdateParameters and "
            "UpdateFile", "ActionParameterMissing",
            [action, "UpdateParameters, UpdateFile"])
    try:
        parameters = json.loads(raw)
    except ValueError:
        raise exception.BadRequest("UpdateParameters is not JSON",
                                   "MalformedJSON")
    targets = parameters.get("Targets") if isinstance(parameters, dict) \
        else None
    return _push_task(_save_upload(upload.read()), targets, action)


def http_push():
    """``HttpPushUri``: the image as the body, aimed by the
    ``HttpPushUriTargets`` set before."""
    if _profile() != "httppush":
        raise exception.NotFound("HttpPushUri")
    return _push_task(_save_upload(flask.request.get_data()),
                      flask.current_app.config["EMULATOR_PUSH_TARGETS"],
                      "HttpPushUri")


def get_firmware_inventory():
    return _reply(res.firmware_inventory_collection(_state().snapshot()))


def get_firmware_component(iid):
    data = _state().snapshot()
    for sid, cid in res.inventory_components(data):
        if res.inventory_id(sid, cid) == iid:
            return _reply(res.software_inventory(data, sid, cid))
    raise exception.NotFound("FirmwareInventory %s" % iid)


def simple_update():
    if not res.has_simple_update(_profile()):
        raise exception.NotFound("Action UpdateService.SimpleUpdate")
    body = _json_body()
    action = "UpdateService.SimpleUpdate"
    if _profile() == "simple-no-targets" and "Targets" in body:
        raise exception.BadRequest(
            "The parameter Targets of %s is not supported" % action,
            "ActionParameterNotSupported", ["Targets", action])
    if "ImageURI" not in body:
        raise exception.BadRequest("The action %s requires the parameter ImageURI" % action,
                            "ActionParameterMissing", [action, "ImageURI"])
    try:
        images.check_uri(body["ImageURI"])
    except ValueError as exc:
        raise exception.BadRequest(str(exc), "ActionParameterValueFormatError",
                            [str(body["ImageURI"]), "ImageURI", action])
    protocol = body.get("TransferProtocol")
    if protocol is not None and protocol not in TRANSFER_PROTOCOLS:
        raise exception.BadRequest("TransferProtocol %r is not one of %s"
                            % (protocol, ", ".join(TRANSFER_PROTOCOLS)),
                            "ActionParameterValueNotInList",
                            [str(protocol), "TransferProtocol", action])
    targets = body.get("Targets")
    if not targets:
        raise exception.BadRequest("The action %s requires the parameter Targets (the Processor "
                            "or FirmwareInventory URI to update)" % action,
                            "ActionParameterMissing", [action, "Targets"])
    if not isinstance(targets, list) or not all(isinstance(t, str) for t in targets):
        raise exception.BadRequest("Targets must be a list of URIs",
                                   "ActionParameterValueTypeError",
                                   [str(targets), "Targets", action])
    state = _state()
    tid = state.create_task(body["ImageURI"], targets, protocol)
    headers = {"Location": res.task_monitor_uri(tid),
               "Retry-After": _retry_after()}
    if _profile() == "location-202":
        # NOTE(emulator): as some BMCs answer: 202, a Location, no body.
        rsp = flask.Response(status=202)
        rsp.headers.update(headers)
        return rsp
    return _reply(res.task(state, state.task(tid)), 202, headers)


def get_task_service():
    return _reply(res.task_service())


def get_tasks():
    return _reply(res.task_collection(_state().snapshot()))


def get_task(tid):
    """A task; 202 + Retry-After while it runs (as many BMCs answer)."""
    state = _state()
    rec = state.task(tid)
    if rec["state"] == "Running":
        return _reply(res.task(state, rec), 202, {"Retry-After": _retry_after()})
    return _reply(res.task(state, rec))


def get_task_monitor(tid):
    """The task monitor: 202 + Retry-After while running, then the Task."""
    return get_task(tid)


def cancel_task(tid):
    """Cancel a running task: 204; 409 when it already ended."""
    if not _state().cancel_task(tid):
        raise wz_exc.Conflict("Task %s has already ended" % tid)
    return flask.Response(status=204)


def get_session_service():
    return _reply(res.session_service())


def get_sessions():
    return _reply(res.session_collection(_state().snapshot()))


def create_session():
    body = _json_body()
    expected = flask.current_app.config["EMULATOR_CREDENTIALS"]
    user, password = body.get("UserName"), body.get("Password")
    if expected and not _credentials_match(expected, user, password):
        raise wz_exc.Unauthorized("Invalid user name or password")
    session_id, token = _state().create_session(user)
    return _reply(res.session(session_id, _state().session(session_id)), 201,
                  {"X-Auth-Token": token, "Location": res.session_uri(session_id)})


def get_session(session_id):
    return _reply(res.session(session_id, _state().session(session_id)))


def delete_session(session_id):
    _state().delete_session(session_id)
    return "", 204


ROUTES = [
    ("/redfish", "GET", get_version),
    (V1, "GET", get_root),
    (V1 + "/Systems", "GET", get_systems),
    (V1 + "/Systems/<sid>", "GET", get_system),
    (V1 + "/Systems/<sid>", "PATCH", patch_system),
    (V1 + "/Systems/<sid>/Actions/ComputerSystem.Reset", "POST", reset_system),
    (V1 + "/Systems/<sid>/Processors", "GET", get_processors),
    (V1 + "/Systems/<sid>/Processors/<did>", "GET", get_processor),
    (V1 + "/Systems/<sid>/Processors/<did>/AccelerationFunctions", "GET", get_functions),
    (V1 + "/Systems/<sid>/Processors/<did>/AccelerationFunctions/<slot_id>", "GET",
     get_function),
    (V1 + "/Chassis", "GET", get_chassis_collection),
    (V1 + "/Chassis/<sid>", "GET", get_chassis),
    (V1 + "/Chassis/<sid>/PCIeDevices", "GET", get_pcie_devices),
    (V1 + "/Chassis/<sid>/PCIeDevices/<did>", "GET", get_pcie_device),
    (V1 + "/Chassis/<sid>/PCIeDevices/<did>/PCIeFunctions", "GET", get_pcie_functions),
    (V1 + "/Chassis/<sid>/PCIeDevices/<did>/PCIeFunctions/<fid>", "GET", get_pcie_function),
    (V1 + "/Chassis/<sid>/NetworkAdapters", "GET", get_network_adapters),
    (V1 + "/Chassis/<sid>/NetworkAdapters/<did>", "GET", get_network_adapter),
    (V1 + "/Chassis/<sid>/NetworkAdapters/<did>/NetworkDeviceFunctions", "GET",
     get_network_device_functions),
    (V1 + "/Chassis/<sid>/NetworkAdapters/<did>/NetworkDeviceFunctions/<fid>", "GET",
     get_network_device_function),
    (V1 + "/Managers", "GET", get_managers),
    (V1 + "/Managers/<mid>", "GET", get_manager),
    (V1 + "/UpdateService", "GET", get_update_service),
    (V1 + "/UpdateService", "PATCH", patch_update_service),
    (V1 + "/UpdateService/SimpleUpdateActionInfo", "GET",
     get_simple_update_action_info),
    (V1 + "/UpdateService/update", "POST", multipart_push),
    (V1 + "/UpdateService/FWUpdate", "POST", http_push),
    (V1 + "/UpdateService/FirmwareInventory", "GET", get_firmware_inventory),
    (V1 + "/UpdateService/FirmwareInventory/<iid>", "GET", get_firmware_component),
    (V1 + "/UpdateService/Actions/UpdateService.SimpleUpdate", "POST", simple_update),
    (V1 + "/TaskService", "GET", get_task_service),
    (V1 + "/TaskService/Tasks", "GET", get_tasks),
    (V1 + "/TaskService/Tasks/<tid>", "GET", get_task),
    (V1 + "/TaskService/TaskMonitors/<tid>", "GET", get_task_monitor),
    (V1 + "/TaskService/TaskMonitors/<tid>", "DELETE", cancel_task),
    (V1 + "/TaskService/Tasks/<tid>", "DELETE", cancel_task),
    (V1 + "/SessionService", "GET", get_session_service),
    (V1 + "/SessionService/Sessions", "GET", get_sessions),
    (V1 + "/SessionService/Sessions", "POST", create_session),
    (V1 + "/SessionService/Sessions/<session_id>", "GET", get_session),
    (V1 + "/SessionService/Sessions/<session_id>", "DELETE", delete_session),
]


def _credentials_match(expected, user, password):
    exp_user, exp_password = expected
    return (isinstance(user, str) and isinstance(password, str)
            and secrets.compare_digest(user.encode(), exp_user.encode())
            and secrets.compare_digest(password.encode(), exp_password.encode()))


def _authenticated():
    expected = flask.current_app.config["EMULATOR_CREDENTIALS"]
    if not expected:
        return True
    token = flask.request.headers.get("X-Auth-Token")
    if token and _state().token_valid(token):
        return True
    header = flask.request.headers.get("Authorization", "")
    if header.startswith("Basic "):
        try:
            user, _, password = base64.b64decode(header[6:]).decode().partition(":")
        except ValueError:
            return False
        return _credentials_match(expected, user, password)
    return False


def _gate():
    """Before every request: 503 fault, authentication, task progress."""
    request = flask.request
    if not request.path.startswith("/redfish"):
        return None
    state = _state()
    unavailable = state.unavailable_for()
    if unavailable > 0:
        return _reply(res.error("The service is temporarily unavailable (injected fault "
                                "unavailable_seconds)", "ServiceTemporarilyUnavailable",
                                [str(int(unavailable) + 1)], "Critical"),
                      503, {"Retry-After": str(int(unavailable) + 1)})
    path = request.path.rstrip("/") or "/"
    if (request.method, path) not in _PUBLIC and not _authenticated():
        return _reply(res.error("Authentication is required", "InsufficientPrivilege",
                                severity="Critical"),
                      401, {"WWW-Authenticate": 'Basic realm="ironic-accel-bmc"'})
    state.advance()
    return None


def _record(response):
    """After every request: log modifying /redfish requests."""
    request = flask.request
    if request.path.startswith("/redfish") and request.method in _MODIFYING:
        body = request.get_json(silent=True)
        if body is None and request.get_data():
            body = request.get_data(as_text=True)
        if isinstance(body, dict) and "Password" in body:
            body = dict(body, Password="***")
        _state().record_request(request.method, request.path, body, response.status_code)
    return response


def _redfish_error(exc):
    if isinstance(exc, exception.NotFound):
        return _reply(res.error("The resource %s was not found" % exc,
                                "ResourceMissingAtURI", [flask.request.path]), 404)
    if isinstance(exc, exception.BadRequest):
        return _reply(res.error(str(exc), exc.message_id, exc.args_), 400)
    if flask.request.path.startswith("/emulator"):
        return flask.jsonify(error=exc.description), exc.code
    rsp = _reply(res.error(exc.description, "GeneralError"), exc.code)
    if isinstance(exc, wz_exc.MethodNotAllowed):
        rsp.headers["Allow"] = ", ".join(exc.valid_methods or ())
    if isinstance(exc, wz_exc.Unauthorized):
        rsp.headers["WWW-Authenticate"] = 'Basic realm="ironic-accel-bmc"'
    return rsp


def create_app(state_file, systems=1, username=None, password=None, clock=time.time,
               profile="simple"):
    """Build the emulator's WSGI app.

    :param state_file: JSON state file; loaded if present, created if not.
    :param systems: how many systems ("1".."N") the BMC has at least.
    :param username: with ``password``, require Basic auth or a session.
    :param password: see ``username``.
    :param clock: POSIX time source (tests may pass their own).
    :param profile: how the UpdateService takes images, one of
        :data:`resources.UPDATE_PROFILES`.
    :returns: a Flask (WSGI) app; its state is in
        ``app.extensions["ironic_accel_emulator"]``.
    :raises: ValueError if the state file is invalid.
    """
    if (username is None) != (password is None):
        raise ValueError("give both username and password, or neither")
    if profile not in res.UPDATE_PROFILES:
        raise ValueError("profile %r is not one of %s"
                         % (profile, ", ".join(res.UPDATE_PROFILES)))
    app = flask.Flask(__name__)
    app.url_map.strict_slashes = False
    app.json.sort_keys = False
    app.config["EMULATOR_CREDENTIALS"] = (username, password) if username is not None else None
    app.config["EMULATOR_UPDATE_PROFILE"] = profile
    app.config["EMULATOR_PUSH_TARGETS"] = []
    app.config["EMULATOR_UPLOADS"] = os.path.join(
        os.path.dirname(os.path.abspath(state_file)), "uploads")
    app.extensions["ironic_accel_emulator"] = st.State(state_file, systems=systems, clock=clock)
    for rule, method, handler in ROUTES:
        app.add_url_rule(rule, endpoint="%s_%s" % (handler.__name__, method),
                         view_func=handler, methods=[method])
    app.register_blueprint(faults.blueprint)
    app.before_request(_gate)
    app.after_request(_record)
    app.register_error_handler(exception.NotFound, _redfish_error)
    app.register_error_handler(exception.BadRequest, _redfish_error)
    app.register_error_handler(wz_exc.HTTPException, _redfish_error)
    return app
