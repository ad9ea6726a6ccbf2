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

import logging

from cyborg_lite import log_limits


def _record(msg="Failed to consume message from queue: %s", args=("x",),
            level=logging.ERROR):
    return logging.LogRecord("oslo_messaging._drivers.amqpdriver", level,
                             __file__, 1, msg, args, None)


class _Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_a_template_passes_burst_times_a_window_then_says_what_it_left_out():
    clock = _Clock()
    limiter = log_limits.RepeatLimiter(interval=60, burst=3, clock=clock)

    passed = [limiter.filter(_record()) for _ in range(50)]
    clock.now += 61
    record = _record()
    after = limiter.filter(record)

    assert passed == [True] * 3 + [False] * 47
    assert after is True
    assert record.getMessage() == (
        "Failed to consume message from queue: x (47 more records like "
        "this left out in the last 61 s)")


def test_other_templates_and_levels_pass_untouched():
    limiter = log_limits.RepeatLimiter(interval=60, burst=1,
                                       clock=_Clock())

    assert limiter.filter(_record())
    assert not limiter.filter(_record())
    assert limiter.filter(_record(msg="Reconnected to AMQP server"))
    assert limiter.filter(_record(level=logging.WARNING))


def test_install_puts_one_limiter_on_each_driver_logger():
    name = "tests.log_limits.example"
    log_limits.install([name])
    log_limits.install([name])

    filters = logging.getLogger(name).filters
    assert sum(isinstance(f, log_limits.RepeatLimiter)
               for f in filters) == 1
