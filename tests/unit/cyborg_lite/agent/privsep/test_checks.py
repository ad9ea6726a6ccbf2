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

"""The checks made on both sides of the privsep channel."""

import os

import pytest

from cyborg_lite.agent.privsep import checks


@pytest.mark.parametrize("value", ["0000:5E:00.1", "0000:5e:00.1"])
def test_pci_address_is_normalized(value):
    assert checks.pci_address(value) == "0000:5e:00.1"


@pytest.mark.parametrize("value", [
    "5e:00.1", "0000:5e:00.8", "0000:5e:00.1/../..", "", None, "x" * 12])
def test_anything_but_a_pci_address_is_refused(value):
    with pytest.raises(ValueError, match="not a PCI address"):
        checks.pci_address(value)


@pytest.mark.parametrize("value", ["../x", "a/b", "..", "", "a" * 200])
def test_a_name_with_a_path_in_it_is_refused(value):
    with pytest.raises(ValueError, match="mdev type"):
        checks.name(value, "mdev type")


def test_image_path_follows_symlinks_before_judging(tmp_path):
    images = tmp_path / "images"
    images.mkdir()
    (images / "ok.gbs").write_bytes(b"gbs")
    secret = tmp_path / "secret"
    secret.write_bytes(b"key")
    (images / "link.gbs").symlink_to(secret)

    assert checks.image_path(images / "ok.gbs", [str(images)]) == str(
        images / "ok.gbs")
    with pytest.raises(ValueError, match="not under"):
        checks.image_path(images / "link.gbs", [str(images)])
    with pytest.raises(ValueError, match="not under"):
        checks.image_path(str(images) + "/../secret", [str(images)])
    with pytest.raises(ValueError, match="not a regular file"):
        checks.image_path(images, [str(tmp_path)])


def test_sysfs_path_may_not_leave_sys(tmp_path, monkeypatch):
    # NOTE(agent): as the capability-less daemon of the tests sees it,
    # whoever runs the tests.
    monkeypatch.setattr(checks, "_holds_capabilities", lambda: False)
    (tmp_path / "sys" / "class").mkdir(parents=True)
    (tmp_path / "sys" / "class" / "out").symlink_to(tmp_path)

    assert checks.sysfs_path(str(tmp_path), "class") == str(
        tmp_path / "sys" / "class")
    with pytest.raises(ValueError, match="leads out of sysfs"):
        checks.sysfs_path(str(tmp_path), "class", "out", "etc")
    with pytest.raises(ValueError, match="sysfs path component"):
        checks.sysfs_path(str(tmp_path), "class", "..")


def test_tool_must_be_the_named_tool_and_writable_by_nobody_else(tmp_path):
    tool = tmp_path / "fpgaconf"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)

    assert checks.tool(str(tool), "fpgaconf") == str(tool)
    with pytest.raises(ValueError, match="not the xbmgmt tool"):
        checks.tool(str(tool), "xbmgmt")
    tool.chmod(0o757)
    with pytest.raises(ValueError, match="may be changed by another user"):
        checks.tool(str(tool), "fpgaconf")
    with pytest.raises(FileNotFoundError):
        checks.tool(str(tmp_path / "xbmgmt"), "xbmgmt")
    with pytest.raises(FileNotFoundError):
        checks.tool("no-such-tool-on-path", "no-such-tool-on-path")
    assert os.path.exists(tool)


def test_a_privileged_process_writes_only_the_real_sysfs(tmp_path,
                                                         monkeypatch):
    monkeypatch.setattr(checks, "_holds_capabilities", lambda: True)
    (tmp_path / "sys").mkdir()

    with pytest.raises(ValueError, match="only / is accepted"):
        checks.sysfs_path(str(tmp_path), "class")
    assert checks.sysfs_path("/", "class") == os.path.realpath("/sys/class")
