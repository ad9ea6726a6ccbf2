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


"""Recorded Redfish trees: record a real BMC, serve a recording.

A recording is a directory in DMTF's mockup layout (the layout of DMTF's
Redfish-Mockup-Creator and Redfish-Mockup-Server): the resource at
``/redfish/v1/<path>`` is ``<directory>/<path>/index.json``, the service root
``<directory>/index.json``.

- :func:`record` reads from a BMC what accelerator discovery reads (the
  service root, every System with its Processors and their acceleration
  functions, the PCIe devices and functions a System lists, a Processor links
  or a linked Chassis holds, the network adapters of a linked Chassis and of
  the chassis it contains with their network device functions and PCIe
  functions, the UpdateService with its FirmwareInventory)
  and writes it in that layout, with credentials removed
  (:func:`scrub`), so that an operator can send the shape of a BMC back;
- :func:`load_tree` reads a recording;
- :func:`create_app` serves one read-only over HTTP, so that ironic-accel (or
  anything else that speaks Redfish) can be pointed at a recorded BMC.
"""

import base64
import datetime
import json
import os
import re
import ssl
import urllib.error
import urllib.parse
import urllib.request

import flask

V1 = "/redfish/v1"

#: Written next to the recorded resources: what was recorded, and what the BMC refused.
RECORD_FILE = "RECORDING.json"

#: Keys whose values are removed from every recorded document, at any depth.
SECRET_KEY = re.compile(
    r"(password|passphrase|secret|token|credential|community|privatekey|"
    r"^key$|authkey|encryptionkey)", re.IGNORECASE)

#: Never more resources than this in one recording (a loop in a BMC's links stops here).
MAX_RESOURCES = 5000


class RecordError(Exception):
    """The recording cannot be made (bad URL, credentials refused, no service root)."""


def _rel(uri):
    """The path of ``uri`` under /redfish/v1 (``""`` for the root), or None."""
    path = urllib.parse.urlsplit(uri).path.rstrip("/")
    if path == V1:
        return ""
    if not path.startswith(V1 + "/"):
        return None
    return path[len(V1) + 1:]


def _oid(value):
    return value.get("@odata.id") if isinstance(value, dict) else None


def _links(value):
    if isinstance(value, list):
        return [_oid(v) for v in value if _oid(v)]
    return [_oid(value)] if _oid(value) else []


def scrub(document):
    """A copy of ``document`` without credentials.

    Every key matching :data:`SECRET_KEY` (``Password``, ``Token``, SNMP
    ``CommunityStrings``, ...) is dropped at any depth. The resources recorded
    (:func:`record`) hold no accounts or sessions to begin with; this is for what
    vendors put under ``Oem``. Returns ``(copy, removed)``, ``removed`` the JSON
    pointers dropped.
    """
    removed = []

    def walk(value, where):
        if isinstance(value, dict):
            result = {}
            for key, item in value.items():
                if SECRET_KEY.search(key):
                    removed.append(f"{where}/{key}")
                    continue
                result[key] = walk(item, f"{where}/{key}")
            return result
        if isinstance(value, list):
            return [walk(item, f"{where}/{n}") for n, item in enumerate(value)]
        return value

    return walk(document, ""), removed


class _Fetcher:
    def __init__(self, url, username, password, verify, timeout):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise RecordError(f"{url!r} is not an http(s) URL of a BMC")
        self.base = f"{parts.scheme}://{parts.netloc}"
        self.headers = {"Accept": "application/json", "OData-Version": "4.0"}
        if username is not None:
            token = base64.b64encode(f"{username}:{password or ''}".encode()).decode()
            self.headers["Authorization"] = "Basic " + token
        self.context = None
        if parts.scheme == "https":
            self.context = ssl.create_default_context()
            if not verify:
                self.context.check_hostname = False
                self.context.verify_mode = ssl.CERT_NONE
        self.timeout = timeout

    def get(self, path):
        request = urllib.request.Request(self.base + path, headers=self.headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout,
                                        context=self.context) as answer:
                return answer.status, json.loads(answer.read() or b"null")
        except urllib.error.HTTPError as exc:
            return exc.code, None
        except ValueError:
            return 200, None


def record(url, directory, username=None, password=None, verify=True, timeout=30):
    """Record what accelerator discovery reads from the BMC at ``url``.

    :param url: the BMC's address (``https://bmc.example.org``); the path is ignored.
    :param directory: where to write the recording (created; existing files of
        the same resources are overwritten).
    :param username: the BMC user (HTTP Basic); the password never reaches the
        recording.
    :returns: the summary written to :data:`RECORD_FILE`: ``resources`` (the
        paths recorded), ``failed`` (``{path: HTTP status}`` of the linked
        resources the BMC did not serve) and ``removed`` (the JSON pointers of
        the credentials removed, per path).
    :raises RecordError: when the service root cannot be read, or the BMC refuses
        the credentials.
    """
    fetcher = _Fetcher(url, username, password, verify, timeout)
    docs, failed, removed = {}, {}, {}

    def load(uri):
        rel = _rel(uri or "")
        if rel is None:
            return None
        if rel in docs or rel in failed:
            return docs.get(rel)
        if len(docs) >= MAX_RESOURCES:
            failed[rel] = "not read: more than %d resources" % MAX_RESOURCES
            return None
        try:
            status, doc = fetcher.get(V1 + ("/" + rel if rel else "/"))
        except (OSError, urllib.error.URLError) as exc:
            if rel == "":
                raise RecordError(f"cannot read the service root of {fetcher.base}: {exc}")
            failed[rel] = str(exc)
            return None
        if status in (401, 403):
            raise RecordError(f"the BMC refused the credentials (HTTP {status} for "
                              f"{V1}/{rel})")
        if status != 200 or not isinstance(doc, dict):
            failed[rel] = status if status != 200 else "not a JSON object"
            return None
        doc, secrets = scrub(doc)
        if secrets:
            removed[rel] = secrets
        docs[rel] = doc
        return doc

    def members(uri):
        return [m for m in (_oid(x) for x in (load(uri) or {}).get("Members", [])) if m]

    def pcie_device(uri):
        device = load(uri)
        if not device:
            return
        for collection in _links(device.get("PCIeFunctions")):
            for member in members(collection):
                load(member)
        for function in _links((device.get("Links") or {}).get("PCIeFunctions")):
            load(function)

    def network_adapter(uri):
        adapter = load(uri) or {}
        functions = members(_oid(adapter.get("NetworkDeviceFunctions")))
        for controller in adapter.get("Controllers") or []:
            links = controller.get("Links") or {} if isinstance(controller, dict) else {}
            functions.extend(_links(links.get("NetworkDeviceFunctions")))
            for device in _links(links.get("PCIeDevices")):
                pcie_device(device)
        for function in functions:
            links = (load(function) or {}).get("Links") or {}
            for pcie in _links(links.get("PCIeFunction")):
                load(pcie)

    def chassis(uri, contained=True):
        body = load(uri) or {}
        for device in members(_oid(body.get("PCIeDevices"))):
            pcie_device(device)
        for adapter in members(_oid(body.get("NetworkAdapters"))):
            network_adapter(adapter)
        if contained:
            for inner in _links((body.get("Links") or {}).get("Contains")):
                chassis(inner, contained=False)

    root = load(V1)
    if root is None:
        raise RecordError(f"{fetcher.base}{V1}/ did not answer a Redfish service root "
                          f"(HTTP {failed.get('')})")
    for system_uri in members(_oid(root.get("Systems"))):
        system = load(system_uri) or {}
        for proc_uri in members(_oid(system.get("Processors"))):
            proc = load(proc_uri) or {}
            links = proc.get("Links") or {}
            for device in _links(links.get("PCIeDevice")):
                pcie_device(device)
            for function in _links(links.get("PCIeFunctions")):
                load(function)
            for chassis_uri in _links(links.get("Chassis")):
                chassis(chassis_uri)
            for slot in (proc.get("FPGA") or {}).get("ReconfigurationSlots") or []:
                for function in _links(slot.get("AccelerationFunction")):
                    load(function)
            for function in members(_oid(proc.get("AccelerationFunctions"))):
                load(function)
        devices = system.get("PCIeDevices")
        if isinstance(devices, dict):
            for device in members(_oid(devices)):
                pcie_device(device)
        for device in _links(devices if isinstance(devices, list) else None):
            pcie_device(device)
        for chassis_uri in _links((system.get("Links") or {}).get("Chassis")):
            chassis(chassis_uri)
    service = load(_oid(root.get("UpdateService")))
    if service:
        for member in members(_oid(service.get("FirmwareInventory"))):
            load(member)

    for rel, doc in docs.items():
        target = os.path.join(directory, rel)
        os.makedirs(target, exist_ok=True)
        with open(os.path.join(target, "index.json"), "w") as f:
            json.dump(doc, f, indent=1, sort_keys=True)
            f.write("\n")
    summary = {
        "recorded_at": datetime.datetime.now(datetime.timezone.utc).strftime(
            "%Y-%m-%dT%H:%M:%SZ"),
        "service": {key: root.get(key) for key in ("Vendor", "Product", "RedfishVersion")
                    if key in root},
        "resources": sorted(V1 + ("/" + rel if rel else "") for rel in docs),
        "failed": {V1 + "/" + rel: why for rel, why in sorted(failed.items())},
        "removed": {V1 + ("/" + rel if rel else ""): ptrs
                    for rel, ptrs in sorted(removed.items())},
    }
    with open(os.path.join(directory, RECORD_FILE), "w") as f:
        json.dump(summary, f, indent=1, sort_keys=True)
        f.write("\n")
    return summary


def load_tree(directory):
    """``{path: document}`` of a recording (paths as ``/redfish/v1/...``, the root
    ``/redfish/v1/``).

    :raises ValueError: when ``directory`` holds no service root.
    """
    tree = {}
    for dirpath, _dirs, files in os.walk(directory):
        if "index.json" not in files:
            continue
        rel = os.path.relpath(dirpath, directory)
        path = V1 + "/" if rel == "." else V1 + "/" + rel.replace(os.sep, "/")
        with open(os.path.join(dirpath, "index.json")) as f:
            tree[path] = json.load(f)
    if V1 + "/" not in tree:
        raise ValueError(f"{directory} holds no service root ({directory}/index.json)")
    return tree


def create_app(tree, username=None, password=None):
    """A read-only Redfish service answering from ``tree`` (see :func:`load_tree`).

    GET of a recorded path answers its document; any other path 404 and any
    other method 405, each as a Redfish error. With ``username`` and
    ``password`` every path but the service root requires them (HTTP Basic).
    """
    app = flask.Flask(__name__)
    documents = {path.rstrip("/") or "/": doc for path, doc in tree.items()}

    def error(status, message):
        rsp = flask.jsonify({"error": {"code": "Base.1.0.GeneralError", "message": message}})
        rsp.status_code = status
        return rsp

    @app.route("/redfish", defaults={"path": ""}, methods=["GET"])
    @app.route("/redfish/<path:path>",
               methods=["GET", "POST", "PATCH", "PUT", "DELETE"])
    def serve(path):
        if not path:
            return flask.jsonify({"v1": V1 + "/"})
        key = ("/redfish/" + path).rstrip("/")
        if username is not None and key != V1:
            auth = flask.request.authorization
            if not auth or (auth.username, auth.password) != (username, password):
                return error(401, "authentication required")
        if flask.request.method != "GET":
            return error(405, "a recorded BMC is read-only")
        doc = documents.get(key)
        if doc is None:
            return error(404, f"{key} is not in the recording")
        rsp = flask.jsonify(doc)
        rsp.headers["OData-Version"] = "4.0"
        return rsp

    return app
