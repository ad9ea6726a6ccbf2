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

"""``cyborg-lite-manage placement migrate-flat``: moved.

The region providers it writes are the Ironic reporter's, so the migration
lives with the reporter: ``ironic-accel-manage placement migrate-flat``
takes the same arguments. This parser stays so that an operator following
older notes learns where it went instead of reading an argparse error.
"""

import sys

MOVED = ("'cyborg-lite-manage placement migrate-flat' moved to "
         "'ironic-accel-manage placement migrate-flat' (same arguments; "
         "the providers it writes are the Ironic reporter's). Nothing was "
         "changed.")


def moved(conf, args):
    """Say where the command went; exit code 2."""
    print(MOVED, file=sys.stderr)
    return 2


def add_commands(subparsers):
    """Add the ``placement`` command group."""
    parser = subparsers.add_parser("placement", help="Placement providers")
    sub = parser.add_subparsers(dest="action", required=True)
    mig = sub.add_parser("migrate-flat",
                         help="moved to ironic-accel-manage")
    # NOTE(cyborg_lite): the old arguments are still accepted, so the
    # command answers with where it went and not with a usage error.
    mig.add_argument("--host")
    mig.add_argument("--inventory")
    mig.add_argument("--map-resource-class", action="append")
    mig.add_argument("--apply", action="store_true")
    mig.set_defaults(func=moved)
