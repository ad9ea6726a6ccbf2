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


"""``cyborg-lite-manage notifications resend``: send the Nova
``accelerator-request-bound`` events a crashed API worker left behind
(see :func:`cyborg_lite.notifier.resend_pending`)."""

import json
import sys

from cyborg_lite import notifier as notifier_mod
from cyborg_lite.db import engine as db_engine


def resend_command(conf, args, out=None):
    """``notifications resend``; returns the exit code.

    0 every claimed event was delivered (or none was due), 1 some are still
    undelivered (recorded ``failed``; ``--failed`` retries them), 2 ``[nova]``
    is not configured.
    """
    out = out or sys.stdout
    db = db_engine.Database.from_conf(conf)
    notifier = notifier_mod.NovaNotifier(conf, db)
    try:
        result = notifier_mod.resend_pending(
            notifier, grace=args.grace, stale_sending=args.stale_sending,
            include_failed=args.failed, limit=args.limit)
    finally:
        notifier.shutdown()
        db.dispose()
    if not result.enabled:
        print("[nova] is not configured: there is no Nova to notify",
              file=sys.stderr)
        return 2
    print(json.dumps({"sent": result.sent, "failed": result.failed},
                     indent=2), file=out)
    return 1 if result.failed else 0


def _seconds(text):
    value = float(text)
    if value < 0:
        raise ValueError(text)
    return value


def add_commands(subparsers):
    """Add the ``notifications`` command group to cyborg-lite-manage."""
    parser = subparsers.add_parser("notifications",
                                   help="Nova accelerator-request events")
    sub = parser.add_subparsers(dest="action", required=True)
    resend = sub.add_parser(
        "resend",
        help="send the events a crashed API worker left pending")
    resend.add_argument(
        "--grace", type=_seconds, default=notifier_mod.DEFAULT_GRACE,
        metavar="SECONDS",
        help="only events pending for longer than this, so events a live "
             "worker is about to send are left to it (default: "
             "%(default)s)")
    resend.add_argument(
        "--stale-sending", type=_seconds, default=None, metavar="SECONDS",
        help="also take over events a worker started sending longer ago "
             "than this (default: twice the longest send with every "
             f"[nova] retry, at least {notifier_mod.DEFAULT_STALE_SENDING})")
    resend.add_argument(
        "--failed", action="store_true",
        help="also retry events that failed after every retry")
    resend.add_argument("--limit", type=int, default=500,
                        help="at most this many events (default: "
                             "%(default)s)")
    resend.set_defaults(func=resend_command)
