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

"""What one API process saw: histograms and counters.

With ``PROMETHEUS_MULTIPROC_DIR`` in the environment when the process
starts (gunicorn's master passes it on to its workers), prometheus-client
keeps each process's values in files there and :func:`collectors` sums
every process's, the dead ones' included, so a scrape answered by any
worker counts the binds of all. Without it, each process reports only its
own (right for a single-process server).
"""

import os

import prometheus_client
from prometheus_client import multiprocess

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"

#: the registry of this module's metrics (not prometheus-client's global
#: one, which a library may fill with its own).
REGISTRY = prometheus_client.CollectorRegistry(auto_describe=True)

BINDS = prometheus_client.Histogram(
    "cyborg_lite_bind_duration_seconds",
    "Seconds the API took to answer a bind (PATCH /v2/accelerator_requests),"
    " by HTTP status: 200 or 202 bound or programming started, 409 refused."
    " A bind that programs answers 202 at once; its programming is "
    "cyborg_lite_programming_duration_seconds.",
    ["status"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
    registry=REGISTRY)

PROGRAMMING = prometheus_client.Histogram(
    "cyborg_lite_programming_duration_seconds",
    "Seconds a programming run (bind, admin, pool or reset) took from its "
    "start to the agent's answer, by outcome (succeeded, failed).",
    ["outcome"],
    buckets=(1, 5, 10, 30, 60, 120, 300, 600, 1200, 1800),
    registry=REGISTRY)

AGENT_UNANSWERED = prometheus_client.Counter(
    "cyborg_lite_agent_unanswered_calls",
    "Calls to a host's agent that got no answer (timed out, or the broker "
    "could not reach it), by host.",
    ["host"],
    registry=REGISTRY)

PERIODIC_FAILURES = prometheus_client.Counter(
    "cyborg_lite_periodic_failures",
    "Periodic passes (reconciler, inventory sync, programming leases) that "
    "raised, by task; a pass skipped because the database is unreachable "
    "or its schema is not current counts too.",
    ["task"],
    registry=REGISTRY)


def multiprocess_dir():
    """The multiprocess directory, or None (single-process values)."""
    return (os.environ.get(MULTIPROC_ENV)
            or os.environ.get(MULTIPROC_ENV.lower()) or None)


if multiprocess_dir():
    # NOTE(metrics): prometheus-client opens its files there at a metric's
    # first value and fails (in a bind) when the directory is missing.
    os.makedirs(multiprocess_dir(), exist_ok=True)


def bind_answered(status, seconds):
    """Record a bind answered with HTTP ``status`` after ``seconds``."""
    BINDS.labels(status=str(status)).observe(seconds)


def programming_ended(ok, seconds):
    """Record a programming run that ended after ``seconds``."""
    PROGRAMMING.labels(outcome="succeeded" if ok else "failed").observe(
        seconds)


def agent_unanswered(host):
    """Record a call the agent of ``host`` did not answer."""
    AGENT_UNANSWERED.labels(host=host).inc()


def periodic_started(task):
    """Show periodic task ``task`` with no failures yet (a counter
    appears at its first value, and an alert on its increase needs one)."""
    PERIODIC_FAILURES.labels(task=task)


def periodic_failed(task):
    """Record a failed pass of periodic task ``task``."""
    PERIODIC_FAILURES.labels(task=task).inc()


class _ThisProcess:
    """The values of this process alone (no multiprocess directory)."""

    def collect(self):
        return REGISTRY.collect()


def collectors():
    """The collectors of every process's values: prometheus-client's
    multiprocess collector when the directory is set, else this
    process's registry."""
    path = multiprocess_dir()
    if path is None:
        return [_ThisProcess()]
    return [multiprocess.MultiProcessCollector(None, path=path)]
