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

"""The ``openstack accelerator ...`` commands, unchanged, against cyborg_lite.

python-openstackclient (10.5) carries the accelerator commands; they run as
an operator would type them: ``openstack --os-auth-type none --os-endpoint
URL accelerator ... -f json``. ``arq bind`` first looks the server up in
Nova, so the compute endpoint points at the Nova stand-in.
"""

import json
import os
import subprocess
import sys
import uuid

import pytest

OPENSTACK = os.path.join(os.path.dirname(sys.executable), "openstack")


@pytest.fixture
def cli(request, server, nova):
    """``cli(*args)`` runs one command; ``-f json`` output is decoded.

    ``--os-endpoint`` is the server's ``/accelerator`` mount, or its root
    when the test parametrizes ``cli`` indirectly with ``""``; keystoneauth
    discovery finds ``/v2`` from either.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    env["OS_COMPUTE_ENDPOINT_OVERRIDE"] = nova.endpoint
    endpoint = server.url + getattr(request, "param", "/accelerator")

    def run(*args, expect_ok=True, api_version=None):
        cmd = [OPENSTACK, "--os-auth-type", "none", "--os-endpoint",
               endpoint]
        if api_version:
            cmd += ["--os-accelerator-api-version", api_version]
        cmd += ["accelerator", *args]
        result = subprocess.run(cmd, capture_output=True, text=True, env=env,
                                timeout=180)
        if expect_ok:
            assert result.returncode == 0, (
                f"{' '.join(args)} exited {result.returncode}:\n"
                f"{result.stderr}\n{result.stdout}")
        else:
            assert result.returncode != 0, result.stdout
            return result
        if "-f" in args and result.stdout.strip():
            return json.loads(result.stdout)
        return result.stdout

    return run


@pytest.mark.parametrize("cli", [""], ids=["root"], indirect=True)
def test_device_profile_commands(cli):
    name = f"osc-{uuid.uuid4().hex[:10]}"
    created = cli("device", "profile", "create", name,
                  "--group",
                  "resources:FPGA=1,trait:CUSTOM_FPGA_INTEL=required",
                  "--description", "from the CLI", "-f", "json")
    assert created["name"] == name
    assert created["groups"] == [
        {"resources:FPGA": "1", "trait:CUSTOM_FPGA_INTEL": "required"}]
    profile_uuid = created["uuid"]

    listed = cli("device", "profile", "list", "-f", "json")
    assert name in [p["name"] for p in listed]

    shown = cli("device", "profile", "show", profile_uuid, "-f", "json")
    assert (shown["name"], shown["uuid"]) == (name, profile_uuid)
    assert shown["groups"] == created["groups"]

    # By name: the CLI sends 2.0 unless told; both work.
    for api_version in (None, "2.2"):
        by_name = cli("device", "profile", "show", name, "-f", "json",
                      api_version=api_version)
        assert by_name["uuid"] == profile_uuid
        assert by_name["groups"] == created["groups"]
    result = cli("device", "profile", "show", "no-such-profile",
                 expect_ok=False)
    assert "no-such-profile" in result.stderr, result.stderr

    cli("device", "profile", "delete", profile_uuid)
    assert name not in [p["name"] for p in cli("device", "profile", "list",
                                                "-f", "json")]
    result = cli("device", "profile", "show", profile_uuid, expect_ok=False)
    # The server's own message reaches the operator.
    assert f"Device profile {profile_uuid} could not be found" in (
        result.stderr), result.stderr


def test_arq_commands(cli, nova, fresh_inventory):
    document = fresh_inventory(1)
    (region,) = document["devices"][0]["regions"]
    name = f"osc-{uuid.uuid4().hex[:10]}"
    cli("device", "profile", "create", name, "--group", "resources:FPGA=1",
        "-f", "json")

    arq = cli("arq", "create", name, "-f", "json")
    assert arq["state"] == "Initial"
    assert arq["device_profile_name"] == name
    arq_uuid = arq["uuid"]
    assert arq_uuid in [a["uuid"] for a in cli("arq", "list", "-f", "json")]

    server_uuid = str(uuid.uuid4())
    nova.add_server(server_uuid)
    bound = cli("arq", "bind", arq_uuid, document["host"], server_uuid,
                region["rp_uuid"], "-f", "json")
    assert bound["state"] == "Bound"
    assert bound["instance_uuid"] == server_uuid
    assert bound["device_rp_uuid"] == region["rp_uuid"]
    assert bound["attach_handle_type"] == "PCI"
    shown = cli("arq", "show", arq_uuid, "-f", "json")
    assert shown["state"] == "Bound"
    assert shown["attach_handle_info"] == bound["attach_handle_info"]

    unbound = cli("arq", "unbind", arq_uuid, "-f", "json")
    assert unbound["state"] == "Unbound"
    assert unbound["instance_uuid"] is None
    assert unbound["hostname"] is None

    cli("arq", "delete", arq_uuid)
    assert arq_uuid not in [a["uuid"] for a in cli("arq", "list", "-f",
                                                   "json")]
    cli("device", "profile", "delete", name)
