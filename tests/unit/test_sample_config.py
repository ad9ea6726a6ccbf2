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

"""The sample configuration files in etc/ are what oslo-config-generator
writes today (``tox -e genconfig``): an operator reading them sees every
option, with its current default and help."""

import pathlib

from oslo_config import generator
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("generator_conf, sample", [
    ("etc/cyborg_lite/cyborg-lite-config-generator.conf",
     "etc/cyborg_lite/cyborg_lite.conf.sample"),
    ("etc/ironic_accel/ironic-accel-config-generator.conf",
     "etc/ironic_accel/ironic-accel.conf.sample"),
    ("etc/cyborg_lite_dra/cyborg-lite-dra-config-generator.conf",
     "etc/cyborg_lite_dra/cyborg-lite-dra.conf.sample"),
])
def test_sample_config_is_current(tmp_path, generator_conf, sample):
    written = tmp_path / "sample.conf"
    generator.main(["--config-file", str(ROOT / generator_conf),
                    "--output-file", str(written)])
    assert written.read_text() == (ROOT / sample).read_text(), (
        f"{sample} is out of date: run tox -e genconfig")
