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

"""A bound on the log lines a library's retry loop can write.

oslo.messaging's RPC reply listener (``ReplyWaiter.poll``) retries a failed
consume at once and logs each failure with its traceback: with the broker's
vhost deleted or its credentials rotated, one API worker wrote about 55
tracebacks a second, some 1.6 GB of log an hour a host. The library has no
back-off there, so the service bounds what such a loop can log: per logger,
level and message template, the first :data:`BURST` records of each
:data:`INTERVAL` pass, the rest are counted, and the next record that passes
says how many were left out. Records of other templates pass untouched.
"""

import logging
import threading
import time

#: Seconds of one window.
INTERVAL = 60.0
#: Records of one template that pass in one window.
BURST = 5

#: The loggers of oslo.messaging's drivers, whose reconnect and consume
#: loops log every failed attempt.
LIMITED_LOGGERS = (
    "oslo_messaging._drivers.amqpdriver",
    "oslo.messaging._drivers.impl_rabbit",
    "oslo_messaging._drivers.impl_rabbit",
)


class RepeatLimiter(logging.Filter):
    """Lets :data:`BURST` records of a template through per window.

    :param interval: seconds of a window.
    :param burst: records of one template passed in a window.
    :param clock: returns seconds (tests pass their own).
    """

    def __init__(self, interval=INTERVAL, burst=BURST, clock=time.monotonic):
        super().__init__()
        self.interval = interval
        self.burst = burst
        self._clock = clock
        self._lock = threading.Lock()
        #: (level, template) -> [window start, passed, left out]
        self._windows = {}

    def filter(self, record):
        key = (record.levelno, str(record.msg))
        now = self._clock()
        with self._lock:
            window = self._windows.get(key)
            if window is None or now - window[0] >= self.interval:
                left_out = window[2] if window is not None else 0
                self._windows[key] = [now, 1, 0]
                if left_out:
                    _say_left_out(record, left_out, now - window[0])
                return True
            if window[1] < self.burst:
                window[1] += 1
                return True
            window[2] += 1
            return False


def _say_left_out(record, count, seconds):
    # NOTE(cyborg_lite): formatted into the record's message, so every
    # handler and formatter shows it.
    record.msg = (f"{record.getMessage()} ({count} more records like this "
                  f"left out in the last {seconds:.0f} s)")
    record.args = None


def install(loggers=LIMITED_LOGGERS):
    """Put one :class:`RepeatLimiter` on each of ``loggers`` (once)."""
    for name in loggers:
        logger = logging.getLogger(name)
        if not any(isinstance(f, RepeatLimiter) for f in logger.filters):
            logger.addFilter(RepeatLimiter())
