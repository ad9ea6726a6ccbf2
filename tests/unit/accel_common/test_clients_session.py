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

"""The client session that reads the environment once per host still
honours every proxy and CA bundle setting requests reads from it."""

import requests

from accel_common import clients


def test_environment_settings_are_those_of_requests(monkeypatch, tmp_path):
    bundle = tmp_path / "ca.pem"
    bundle.write_text("")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example.org:3128")
    monkeypatch.setenv("NO_PROXY", "nova.internal")
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(bundle))
    once, plain = clients.EnvironmentOnceSession(), requests.Session()
    for url in ("https://nova.example.org/v2.1/os-server-external-events",
                "https://nova.internal/v2.1/os-server-external-events",
                "http://nova.example.org:8774/"):
        for verify in (True, False, "/etc/ssl/other.pem"):
            assert once.merge_environment_settings(
                url, {}, None, verify, None) == \
                plain.merge_environment_settings(url, {}, None, verify, None)


def test_environment_is_read_once_per_host(monkeypatch):
    reads = []
    real = requests.sessions.get_environ_proxies
    monkeypatch.setattr(requests.sessions, "get_environ_proxies",
                        lambda *a, **k: reads.append(a) or real(*a, **k))
    session = clients.EnvironmentOnceSession()
    for path in ("a", "b", "c"):
        settings = session.merge_environment_settings(
            f"https://nova.example.org/{path}", {}, None, True, None)
        settings["proxies"]["https"] = "changed by a caller"
    assert len(reads) == 1
    assert session.merge_environment_settings(
        "https://placement.example.org/", {}, None, True, None)
    assert len(reads) == 2
    assert "changed by a caller" not in session.merge_environment_settings(
        "https://nova.example.org/d", {}, None, True, None)["proxies"].values()
