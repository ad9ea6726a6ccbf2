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

"""A stand-in for kube-apiserver: the ``resource.k8s.io/v1`` ResourceSlices
and ResourceClaims a DRA kubelet plugin reads and writes (a claim's
``status`` subresource included).

No Kubernetes control plane can run where this project is tested, so this
small HTTP server answers the paths, verbs and status codes of the real one
for those two resources: list (with the ``spec.driver``, ``spec.nodeName``
and ``metadata.name`` field selectors), get, create (409 AlreadyExists),
update (409 Conflict on a stale ``metadata.resourceVersion``, 422 on a
changed immutable field), delete, 405 for other verbs; a bearer token
required (401); errors as ``meta.v1.Status``; one resourceVersion counter
for all objects, ``metadata.generation`` counting spec changes.
:attr:`KubeApiServer.writes` keeps every ResourceSlice write with the
problems its ``validate`` hook found. :meth:`KubeApiServer.schedule`
plays kube-scheduler's DRA allocator for one device (taints and shared
counters honoured, no tolerations or CEL). Used by the tests and by
``cyborg-lite-demo --kubernetes``.
"""

import copy
import datetime
import http.server
import json
import pathlib
import threading
import urllib.parse
import uuid

GROUP = "resource.k8s.io"
PREFIX = "/apis/resource.k8s.io/v1"


def _status(code, reason, message, kind=None, name=None, causes=None):
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure", "message": message, "reason": reason,
            "code": code}
    if kind or name or causes:
        body["details"] = {k: v for k, v in (
            ("name", name), ("group", GROUP), ("kind", kind),
            ("causes", causes)) if v}
    return body


class _Failure(Exception):
    def __init__(self, code, reason, message, **details):
        super().__init__(message)
        self.body = _status(code, reason, message, **details)


class KubeApiServer:
    """The stand-in; :attr:`url`, :attr:`token`, :meth:`kubeconfig`.

    :param validate: ``validate(body) -> [problems]`` for every
        ResourceSlice written (the tests pass the upstream OpenAPI schema's
        check); a write with problems is refused with 422 Invalid.
    :param validate_claim_status: ``validate_claim_status(claim, status)
        -> [problems]`` for every ResourceClaim status written, likewise.
    """

    def __init__(self, validate=None, validate_claim_status=None):
        self.validate = validate or (lambda body: [])
        self.validate_claim_status = (validate_claim_status
                                      or (lambda claim, status: []))
        #: ``((namespace, name), status, problems)`` of every status PUT.
        self.claim_status_writes = []
        #: Feature gates turned off (``DRAPartitionableDevices``,
        #: ``DRADeviceTaints``): their fields are dropped from writes.
        self.gates_off = set()
        self.token = uuid.uuid4().hex
        self.slices = {}
        self.claims = {}
        self.writes = []
        self.requests = []
        self._version = 0
        self._lock = threading.Lock()
        store = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _handle(self):
                store._dispatch(self)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _handle

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                                       Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_port}"
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        daemon=True)
        self._thread.start()

    def stop(self):
        self._server.shutdown()
        self._server.server_close()

    def kubeconfig(self, path):
        """Write a kubeconfig for this server (JSON is YAML) to ``path``."""
        pathlib.Path(path).write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config",
            "clusters": [{"name": "standin",
                          "cluster": {"server": self.url}}],
            "users": [{"name": "plugin", "user": {"token": self.token}}],
            "contexts": [{"name": "standin", "context": {
                "cluster": "standin", "user": "plugin"}}],
            "current-context": "standin"}))
        return str(path)

    # The store.

    def _stamp(self, body, old=None):
        self._version += 1
        meta = body.setdefault("metadata", {})
        meta["resourceVersion"] = str(self._version)
        if old is None:
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = datetime.datetime.now(
                datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            meta["generation"] = 1
        else:
            for key in ("uid", "creationTimestamp"):
                meta[key] = old["metadata"][key]
            meta["generation"] = old["metadata"]["generation"] + (
                body.get("spec") != old.get("spec"))
        return body

    def add_claim(self, namespace, name, results, config=(), uid=None):
        """Create an allocated ResourceClaim as the scheduler leaves it."""
        body = {"apiVersion": f"{GROUP}/v1", "kind": "ResourceClaim",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {"devices": {"requests": []}},
                "status": {"allocation": {"devices": {
                    "results": list(results), "config": list(config)}}}}
        with self._lock:
            self._stamp(body)
            if uid:
                body["metadata"]["uid"] = uid
            self.claims[(namespace, name)] = body
        return copy.deepcopy(body)

    def schedule(self, namespace, name, driver, node, request="accel",
                 config=(), select=None):
        """Allocate one device of ``driver`` on ``node`` to a new claim,
        as kube-scheduler's DRA allocator does (no tolerations): the first
        published device, in slice and device order, that ``select``
        (``select(device) -> bool``) accepts, that has no ``NoSchedule`` or
        ``NoExecute`` taint, is allocated to no claim and whose
        ``consumesCounters`` fit what the claims' devices leave of the
        shared counters. Returns the claim (as :meth:`add_claim`).

        :raises LookupError: no device fits (the pod stays pending).
        """
        with self._lock:
            slices = [s for _, s in sorted(self.slices.items())
                      if s["spec"].get("driver") == driver
                      and s["spec"].get("nodeName") == node]
            generation = max((s["spec"]["pool"]["generation"]
                              for s in slices), default=0)
            slices = [s for s in slices
                      if s["spec"]["pool"]["generation"] == generation]
            devices = {d["name"]: d for s in slices
                       for d in s["spec"].get("devices", [])}
            left = {c["name"]: {k: int(v["value"])
                                for k, v in c["counters"].items()}
                    for s in slices
                    for c in s["spec"].get("sharedCounters", [])}
            taken = set()
            for claim in self.claims.values():
                allocation = (claim.get("status") or {}).get("allocation")
                for result in ((allocation or {}).get("devices") or {}).get(
                        "results") or []:
                    if (result.get("driver"), result.get("pool")) != (
                            driver, node):
                        continue
                    taken.add(result["device"])
                    held = devices.get(result["device"]) or {}
                    for use in held.get("consumesCounters", []):
                        for counter, value in use["counters"].items():
                            left.setdefault(use["counterSet"], {})
                            left[use["counterSet"]][counter] = left[
                                use["counterSet"]].get(counter, 0) - int(
                                    value["value"])
        for device_name, device in devices.items():
            if device_name in taken or (select and not select(device)):
                continue
            if any(t.get("effect") in ("NoSchedule", "NoExecute")
                   for t in device.get("taints", [])):
                continue
            if all(int(value["value"]) <= left.get(use["counterSet"], {}).get(
                    counter, 0)
                    for use in device.get("consumesCounters", [])
                    for counter, value in use["counters"].items()):
                return self.add_claim(namespace, name, [
                    {"request": request, "driver": driver, "pool": node,
                     "device": device_name}], config)
        raise LookupError(f"no device of {driver} on {node} fits claim "
                          f"{namespace}/{name}")

    def delete_claim(self, namespace, name):
        with self._lock:
            self.claims.pop((namespace, name), None)

    # HTTP.

    def _dispatch(self, handler):
        parts = urllib.parse.urlsplit(handler.path)
        query = dict(urllib.parse.parse_qsl(parts.query))
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        self.requests.append((handler.command, parts.path))
        try:
            if handler.headers.get("Authorization") != \
                    f"Bearer {self.token}":
                raise _Failure(401, "Unauthorized", "Unauthorized")
            body = json.loads(raw) if raw else None
            with self._lock:
                code, answer = self._route(handler.command, parts.path,
                                           query, body)
        except _Failure as failure:
            code, answer = failure.body["code"], failure.body
        except ValueError as error:
            code, answer = 400, _status(400, "BadRequest",
                                        f"invalid JSON: {error}")
        data = json.dumps(answer).encode()
        handler.send_response(code)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    def _route(self, method, path, query, body):
        if not path.startswith(PREFIX + "/"):
            raise _Failure(404, "NotFound", "the server could not find the "
                                            "requested resource")
        segments = path[len(PREFIX) + 1:].split("/")
        if segments[0] == "resourceslices" and len(segments) <= 2:
            return self._slices(method, segments[1:], query, body)
        if (len(segments) >= 3 and segments[0] == "namespaces"
                and segments[2] == "resourceclaims" and len(segments) <= 5):
            return self._claims(method, segments[1], segments[3:], body)
        raise _Failure(404, "NotFound", "the server could not find the "
                                        "requested resource")

    def _not_allowed(self, method):
        raise _Failure(405, "MethodNotAllowed",
                       f"the server does not allow this method on the "
                       f"requested resource ({method})")

    def _slices(self, method, rest, query, body):
        kind = "resourceslices"
        if not rest:
            if method == "GET":
                return 200, self._list(query)
            if method == "POST":
                return 201, self._create_slice(body)
            self._not_allowed(method)
        name = rest[0]
        current = self.slices.get(name)
        if method == "GET":
            if current is None:
                raise _Failure(404, "NotFound", f'{kind}.{GROUP} "{name}" '
                               f"not found", kind=kind, name=name)
            return 200, copy.deepcopy(current)
        if method == "PUT":
            return 200, self._update_slice(name, body)
        if method == "DELETE":
            if current is None:
                raise _Failure(404, "NotFound", f'{kind}.{GROUP} "{name}" '
                               f"not found", kind=kind, name=name)
            del self.slices[name]
            return 200, current
        self._not_allowed(method)

    def _list(self, query):
        selectors = {}
        for term in filter(None, query.get("fieldSelector", "").split(",")):
            field, _, value = term.partition("=")
            if field not in ("spec.driver", "spec.nodeName",
                             "metadata.name"):
                raise _Failure(400, "BadRequest",
                               f'field label not supported: {field}')
            selectors[field] = value.lstrip("=")

        def field(obj, name):
            node = obj
            for key in name.split("."):
                node = (node or {}).get(key)
            return node

        items = [copy.deepcopy(s) for _, s in sorted(self.slices.items())
                 if all(field(s, k) == v for k, v in selectors.items())]
        return {"apiVersion": f"{GROUP}/v1", "kind": "ResourceSliceList",
                "metadata": {"resourceVersion": str(self._version)},
                "items": items}

    def _drop_disabled(self, body):
        """Drop the fields of features whose gate is off, as kube-apiserver
        does on a write: ``spec.sharedCounters`` and devices'
        ``consumesCounters`` (DRAPartitionableDevices), devices' ``taints``
        (DRADeviceTaints)."""
        if not isinstance(body, dict) or not isinstance(
                body.get("spec"), dict):
            return body
        spec = body["spec"]
        if "DRAPartitionableDevices" in self.gates_off:
            spec.pop("sharedCounters", None)
        for device in spec.get("devices") or []:
            if not isinstance(device, dict):
                continue
            if "DRAPartitionableDevices" in self.gates_off:
                device.pop("consumesCounters", None)
            if "DRADeviceTaints" in self.gates_off:
                device.pop("taints", None)
        return body

    def _check(self, verb, body):
        body = self._drop_disabled(body)
        problems = self.validate(body) if isinstance(body, dict) else [
            "the body is not a JSON object"]
        self.writes.append((verb, copy.deepcopy(body), problems))
        if problems:
            name = (body or {}).get("metadata", {}).get("name") \
                if isinstance(body, dict) else None
            raise _Failure(
                422, "Invalid",
                f'ResourceSlice.{GROUP} "{name}" is invalid: '
                + "; ".join(problems), kind="ResourceSlice", name=name,
                causes=[{"reason": "FieldValueInvalid", "message": p}
                        for p in problems])

    def _create_slice(self, body):
        self._check("create", body)
        meta = body["metadata"]
        if meta.get("resourceVersion"):
            raise _Failure(400, "BadRequest", "resourceVersion should not "
                                              "be set on objects to be "
                                              "created")
        name = meta.get("name")
        if name in self.slices:
            raise _Failure(409, "AlreadyExists",
                           f'resourceslices.{GROUP} "{name}" already exists',
                           kind="resourceslices", name=name)
        self.slices[name] = self._stamp(copy.deepcopy(body))
        return copy.deepcopy(self.slices[name])

    def _update_slice(self, name, body):
        self._check("update", body)
        if body["metadata"].get("name") != name:
            raise _Failure(400, "BadRequest",
                           f"the name of the object "
                           f"({body['metadata'].get('name')}) does not match "
                           f"the name on the URL ({name})")
        current = self.slices.get(name)
        if current is None:
            raise _Failure(404, "NotFound",
                           f'resourceslices.{GROUP} "{name}" not found',
                           kind="resourceslices", name=name)
        version = body["metadata"].get("resourceVersion")
        if version and version != current["metadata"]["resourceVersion"]:
            raise _Failure(409, "Conflict",
                           f'Operation cannot be fulfilled on '
                           f'resourceslices.{GROUP} "{name}": the object '
                           f"has been modified; please apply your changes "
                           f"to the latest version and try again",
                           kind="resourceslices", name=name)
        for field in ("driver", "nodeName"):
            if body["spec"].get(field) != current["spec"].get(field):
                raise _Failure(422, "Invalid", f"spec.{field}: field is "
                                               f"immutable")
        self.slices[name] = self._stamp(copy.deepcopy(body), current)
        return copy.deepcopy(self.slices[name])

    def _claims(self, method, namespace, rest, body):
        kind = "resourceclaims"
        if not rest:
            if method == "GET":
                return 200, {"apiVersion": f"{GROUP}/v1",
                             "kind": "ResourceClaimList",
                             "metadata": {"resourceVersion":
                                          str(self._version)},
                             "items": [copy.deepcopy(c) for (ns, _), c in
                                       sorted(self.claims.items())
                                       if ns == namespace]}
            self._not_allowed(method)
        name = rest[0]
        current = self.claims.get((namespace, name))
        if current is None:
            raise _Failure(404, "NotFound",
                           f'{kind}.{GROUP} "{name}" not found',
                           kind=kind, name=name)
        if len(rest) == 2 and rest[1] != "status":
            raise _Failure(404, "NotFound", "the server could not find the "
                                            "requested resource")
        if method == "GET":
            return 200, copy.deepcopy(current)
        if method == "DELETE" and len(rest) == 1:
            del self.claims[(namespace, name)]
            return 200, current
        if method == "PUT" and len(rest) == 2:
            return 200, self._update_claim_status(namespace, name, current,
                                                  body)
        self._not_allowed(method)

    def _update_claim_status(self, namespace, name, current, body):
        """PUT .../resourceclaims/<name>/status: only ``status`` is taken
        (``status.allocation`` must not change); stale resourceVersion or
        another uid: 409."""
        kind = "resourceclaims"
        meta = (body or {}).get("metadata") or {}
        if meta.get("resourceVersion") != \
                current["metadata"]["resourceVersion"]:
            raise _Failure(409, "Conflict",
                           f'Operation cannot be fulfilled on {kind}.{GROUP} '
                           f'"{name}": the object has been modified; please '
                           f'apply your changes to the latest version and '
                           f'try again', kind=kind, name=name)
        if meta.get("uid") not in (None, current["metadata"]["uid"]):
            raise _Failure(409, "Conflict",
                           f"Precondition failed: UID in precondition: "
                           f"{meta.get('uid')}, UID in object meta: "
                           f"{current['metadata']['uid']}", kind=kind,
                           name=name)
        status = copy.deepcopy((body or {}).get("status") or {})
        problems = list(self.validate_claim_status(current, status))
        if status.get("allocation") != current["status"].get("allocation"):
            problems.append("status.allocation: field is immutable")
        self.claim_status_writes.append(((namespace, name),
                                         copy.deepcopy(status), problems))
        if problems:
            raise _Failure(422, "Invalid",
                           f'ResourceClaim.{GROUP} "{name}" is invalid: '
                           + "; ".join(problems), kind=kind, name=name)
        stored = copy.deepcopy(current)
        stored["status"] = status
        self._stamp(stored, current)
        self.claims[(namespace, name)] = stored
        return copy.deepcopy(stored)
