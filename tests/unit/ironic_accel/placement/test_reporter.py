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

"""Reporter decisions that need no Placement: reporting switched off."""

import logging

from oslo_config import cfg

from ironic_accel.conf import placement as placement_conf
from ironic_accel.placement import reporter


def _conf():
    conf = cfg.ConfigOpts()
    placement_conf.register_opts(conf)
    conf([])
    return conf


def test_missing_placement_section_warns_once(caplog):
    conf = _conf()
    document = {"host": "compute-1", "devices": []}
    with caplog.at_level(logging.DEBUG, logger="ironic_accel"):
        for _ in range(3):
            assert reporter.report_after_refresh("node-1", document,
                                                 conf=conf) is None
    warnings = [r for r in caplog.records
                if r.levelno == logging.WARNING and "[placement]" in
                r.getMessage()]
    assert len(warnings) == 1
    assert "NOT reported" in warnings[0].getMessage()


def test_disabled_reporting_does_not_warn(caplog):
    conf = _conf()
    # NOTE(ironic-accel): the option group objects are shared between
    # ConfigOpts, so the override must not outlive the test.
    conf.set_override("enabled", False, "accel_placement")
    try:
        with caplog.at_level(logging.DEBUG, logger="ironic_accel"):
            reporter.report_after_refresh("node-1", {"host": "h"},
                                          conf=conf)
    finally:
        conf.clear_override("enabled", "accel_placement")
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
