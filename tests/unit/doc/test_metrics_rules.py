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

"""The alert rules admin/metrics.rst shows parse as a Prometheus rules
file, and each expression names only metrics, labels and label values the
API exports."""

import re

import yaml

from cyborg_lite import arq_states
from cyborg_lite.db import counts as counts_db
from cyborg_lite.db import models
from cyborg_lite.metrics import process
from cyborg_lite.metrics import state
from tests.unit.doc import blocks

PAGE = blocks.DOCS / "admin" / "metrics.rst"
#: a selector: a metric name and what is between its braces.
_SELECTOR = re.compile(r"\b(cyborg_lite_\w+)(?:\{([^}]*)\})?")
_MATCHER = re.compile(r'(\w+)\s*(=~|!=|!~|=)\s*"([^"]*)"')
#: labels Prometheus adds to every scraped series.
_TARGET_LABELS = {"instance", "job"}


def _exported():
    """``{series name: {label: values known or None}}``."""
    names = {}
    for family in process.REGISTRY.collect():
        labels = dict.fromkeys(_LABELS[family.name])
        suffixes = {"histogram": ("_bucket", "_count", "_sum"),
                    "counter": ("_total",)}[family.type]
        for suffix in suffixes:
            extra = {"le": None} if suffix == "_bucket" else {}
            names[family.name + suffix] = dict(labels, **extra)
    now = models.utcnow()
    empty = counts_db.Counts(regions={}, arqs={}, events={},
                             periodic_ends={"inventory-sync": now})
    families = list(state.StateCollector._families(empty, now))
    for family in families:
        labels = {}
        for sample in family.samples:
            for label, value in sample.labels.items():
                labels.setdefault(label, set()).add(value)
        names[family.name] = labels
    names["cyborg_lite_database_up"] = {}
    return names


#: the label names of the process metrics (by family name).
_LABELS = {"cyborg_lite_bind_duration_seconds": ("status",),
           "cyborg_lite_programming_duration_seconds": ("outcome",),
           "cyborg_lite_agent_unanswered_calls": ("host",),
           "cyborg_lite_periodic_failures": ("task",)}


def _rules():
    (block,) = [b for b in blocks.blocks(PAGE)
                if b.caption == "cyborg-lite-alerts.yml"]
    document = yaml.safe_load(block.text)
    return [rule for group in document["groups"] for rule in group["rules"]]


def test_rules_file_has_what_prometheus_needs():
    rules = _rules()

    assert len(rules) >= 10
    for rule in rules:
        assert set(rule) <= {"alert", "expr", "for", "labels",
                             "annotations"}, rule
        assert rule["alert"].startswith("CyborgLite"), rule
        assert rule["labels"]["severity"] in ("critical", "warning"), rule
        assert rule["annotations"]["summary"], rule
        assert rule["expr"].count("(") == rule["expr"].count(")"), rule
    assert len({r["alert"] for r in rules}) == len(rules)


def test_each_expression_names_what_the_api_exports():
    exported = _exported()
    periodic_tasks = {"programming-leases", "programming-reconciler",
                      "inventory-sync"}
    known_values = {("task", name) for name in periodic_tasks}
    known_values |= {("outcome", "succeeded"), ("outcome", "failed"),
                     ("status", "202"), ("status", "409")}
    known_values |= {("state", s) for s in arq_states.ALL}
    wrong = []
    for rule in _rules():
        found = _SELECTOR.findall(rule["expr"])
        assert found, rule
        for name, matchers in found:
            if name not in exported:
                wrong.append(f"{rule['alert']}: no metric {name}")
                continue
            for label, op, value in _MATCHER.findall(matchers):
                if label in _TARGET_LABELS:
                    continue
                if label not in exported[name]:
                    wrong.append(f"{rule['alert']}: {name} has no label "
                                 f"{label}")
                    continue
                values = exported[name][label] or set()
                wanted = (value.split("|") if op == "=~" else [value])
                for one in wanted:
                    if one not in values and (label, one) not in \
                            known_values:
                        wrong.append(f"{rule['alert']}: {name} never has "
                                     f"{label}={one!r}")
    assert not wrong, "\n".join(wrong)
