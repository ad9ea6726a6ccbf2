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

"""The plugin's calls to the Kubernetes API server, through the kubernetes
Python client: ResourceSlices (cluster-scoped) and ResourceClaims of
``resource.k8s.io/v1``, as plain JSON documents."""

import json

from kubernetes import client as k8s_client
from kubernetes import config as k8s_config
from kubernetes.client import exceptions as k8s_exceptions

API_VERSION = "resource.k8s.io/v1"

#: Seconds per API server request.
TIMEOUT = 10


class KubeError(Exception):
    """An API server call failed; ``status`` is its HTTP status (None
    when it did not answer)."""

    def __init__(self, what, status=None, detail=""):
        self.status = status
        super().__init__(f"Kubernetes API: {what} failed"
                         + (f" ({status})" if status else "")
                         + (f": {detail}" if detail else ""))


def _detail(error):
    try:
        return json.loads(error.body).get("message", error.body)
    except (TypeError, ValueError, AttributeError):
        return str(error.body or error.reason)


class Kube:
    """The API server for one plugin.

    :param kubeconfig: a kubeconfig file; empty for the pod's in-cluster
        service account.
    """

    def __init__(self, kubeconfig=""):
        if kubeconfig:
            api_client = k8s_config.new_client_from_config(
                config_file=kubeconfig)
        else:
            configuration = k8s_client.Configuration()
            k8s_config.load_incluster_config(
                client_configuration=configuration)
            api_client = k8s_client.ApiClient(configuration)
        self._api = k8s_client.ResourceV1Api(api_client)

    def _call(self, what, method, *args, **kwargs):
        try:
            response = method(*args, _preload_content=False,
                              _request_timeout=TIMEOUT, **kwargs)
        except k8s_exceptions.ApiException as error:
            raise KubeError(what, error.status, _detail(error)) from error
        except Exception as error:
            # NOTE(dra): urllib3 connection errors, timeouts, TLS.
            raise KubeError(what, detail=str(error)) from error
        return json.loads(response.data) if response.data else None

    def list_slices(self, driver, node):
        """The ResourceSlices of ``driver`` on ``node``."""
        selector = f"spec.driver={driver},spec.nodeName={node}"
        body = self._call("listing ResourceSlices",
                          self._api.list_resource_slice,
                          field_selector=selector)
        return body.get("items", [])

    def create_slice(self, body):
        """Create a ResourceSlice; returns what the server stored."""
        return self._call(
            f"creating ResourceSlice {body['metadata']['name']}",
            self._api.create_resource_slice, body)

    def replace_slice(self, body):
        """Replace a ResourceSlice (its metadata.resourceVersion checked)."""
        name = body["metadata"]["name"]
        return self._call(f"replacing ResourceSlice {name}",
                          self._api.replace_resource_slice, name, body)

    def delete_slice(self, name):
        """Delete a ResourceSlice; one already gone is fine."""
        try:
            self._call(f"deleting ResourceSlice {name}",
                       self._api.delete_resource_slice, name)
        except KubeError as error:
            if error.status != 404:
                raise

    def replace_claim_status(self, body):
        """Replace a ResourceClaim's status (its metadata.resourceVersion
        checked); returns what the server stored."""
        meta = body["metadata"]
        return self._call(
            f"writing the status of ResourceClaim {meta['namespace']}/"
            f"{meta['name']}",
            self._api.replace_namespaced_resource_claim_status,
            meta["name"], meta["namespace"], body)

    def read_claim(self, namespace, name):
        """The ResourceClaim ``namespace/name``, or None when absent."""
        try:
            return self._call(f"reading ResourceClaim {namespace}/{name}",
                              self._api.read_namespaced_resource_claim,
                              name, namespace)
        except KubeError as error:
            if error.status == 404:
                return None
            raise
