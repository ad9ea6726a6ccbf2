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

"""What several benchmarks share."""

import contextlib

from tests.fixtures import cyborg_server


def percentile(values, fraction):
    """The nearest-rank percentile of ``values`` (fraction in 0..1)."""
    ordered = sorted(values)
    index = max(0, min(len(ordered) - 1,
                       int(round(fraction * len(ordered) + 0.5)) - 1))
    return ordered[index]


@contextlib.contextmanager
def database(kind, prefix="cyborg_bench", sqlite_url=None):
    """A database made for the run, dropped after: yields its URL
    (``sqlite_url`` for sqlite: None lets the server use its own file)."""
    if kind == "sqlite":
        yield sqlite_url
    elif kind == "mariadb":
        with cyborg_server.mariadb_database(prefix) as url:
            yield url
    else:
        with cyborg_server.postgresql_database(prefix) as url:
            yield url
