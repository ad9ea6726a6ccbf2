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


import pytest

from cyborg_lite.api import routes
from cyborg_lite.api.handlers import device_profiles


@pytest.mark.parametrize("path, served", [
    ("/", "/"),
    ("", ""),
    ("/v2", "/v2"),
    ("/v2/", "/v2/"),
    ("/v2/devices", "/v2/devices"),
    ("/accelerator", "/accelerator"),
    ("/accelerator/", "/accelerator/"),
    ("/accelerator/v2", "/accelerator/v2"),
    ("/accelerator/v2/arqs", "/accelerator/v2/arqs"),
    ("/accelerator_requests", "/v2/accelerator_requests"),
    ("/devices/u/disable", "/v2/devices/u/disable"),
    ("/accelerator/devices", "/accelerator/v2/devices"),
    ("/acceleratorx", "/v2/acceleratorx"),
    ("/v2.0/devices", "/v2/v2.0/devices"),
])
def test_v2_path_routes_unversioned_paths_to_v2(path, served):
    assert routes.v2_path(path) == served


def test_middleware_rewrites_path_info_before_routing():
    seen = []

    def inner(environ, start_response):
        seen.append(environ["PATH_INFO"])
        return []

    middleware = routes.route_to_v2(inner)
    middleware({"PATH_INFO": "/devices"}, None)
    middleware({"PATH_INFO": "/"}, None)
    middleware({}, None)
    assert seen == ["/v2/devices", "/", "/"]


def test_only_novas_lookup_has_a_recording_step():
    # A GET computes and writes nothing; the one read whose answer needs a
    # record (Nova's lookup of a boot's profile) names its step here.
    steps = {(rule, method): handler
             for _, rule, methods in routes.ROUTES
             for method, handler in methods.items()
             if isinstance(handler, tuple)}
    assert steps == {("/v2/device_profiles", "GET"): (
        device_profiles.list_profiles, device_profiles.route_lookup)}
