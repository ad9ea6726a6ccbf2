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

"""The fixtures every test may name: each module's docstring says what it
starts. A fixture runs only for the tests that ask for it, so loading them
all here starts nothing."""

import pytest

pytest_plugins = [
    "tests.fixtures.bmc",
    "tests.fixtures.cyborg",
    "tests.fixtures.cyborg_server",
    "tests.fixtures.databases",
    "tests.fixtures.ironic",
    "tests.fixtures.keystone",
    "tests.fixtures.kube_apiserver",
    "tests.fixtures.nova",
    "tests.fixtures.nova_standin",
    "tests.fixtures.placement",
    "tests.fixtures.rabbitmq",
    "tests.unit.ironic_accel.recorded_bmc",
]


#: ``(module, name)`` of the session fixtures that cost seconds to start and
#: that each xdist worker running one of their tests starts for itself.
SHARED_SESSION_FIXTURES = {
    ("tests.fixtures.keystone", "keystone"),
    ("tests.interop.conftest", "server"),
}

_UNGROUPED = pytest.StashKey[str]()


def _sharing_keys(item):
    """What ``item`` shares with other tests that a worker sets up once:
    its module, when a fixture of module (or class, package) scope serves
    it, or a session fixture of its own module; the fixtures of
    :data:`SHARED_SESSION_FIXTURES` it uses."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return set()
    module = item.nodeid.split("::", 1)[0]
    keys = set()
    for name, definitions in info.name2fixturedefs.items():
        definition = definitions[-1]
        where = getattr(definition.func, "__module__", None)
        if definition.scope in ("module", "class", "package") or (
                definition.scope == "session"
                and where == getattr(item.module, "__name__", "")):
            keys.add(module)
        elif (where, name) in SHARED_SESSION_FIXTURES:
            keys.add(f"{where}.{name}")
    return keys


def _group_sharing_tests(items):
    """Mark the tests that share something (:func:`_sharing_keys`) with
    one ``xdist_group``, so ``--dist loadgroup`` sends them to one worker
    and what they share is set up once, not once per worker. Keys that one
    test holds together join one group."""
    parent = {}

    def root(key):
        while parent.setdefault(key, key) != key:
            key = parent[key]
        return key

    keyed = []
    for item in items:
        keys = sorted(_sharing_keys(item))
        if not keys or item.get_closest_marker("xdist_group"):
            continue
        for key in keys[1:]:
            parent[root(key)] = root(keys[0])
        keyed.append((item, keys[0]))
    for item, key in keyed:
        item.add_marker(pytest.mark.xdist_group(root(key)))


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(config, items):
    """Group the tests that share what a worker sets up once
    (:func:`_group_sharing_tests`), then fail those that ``--dist
    loadgroup`` did not group.

    pytest-xdist groups by appending ``@group`` to the node ids a worker
    collects; under pytest 9.2 that no longer takes (pytest-xdist issue
    1386) and nothing fails: a grouped module then runs on every worker,
    each starting its own copy of what the group shares (the real Nova's
    whole cloud). Hence ``pytest<9.2`` in constraints.txt, and this check
    for whoever raises it.
    """
    loadgroup = getattr(config.option, "loadgroup", False)
    if loadgroup:
        _group_sharing_tests(items)
    result = yield
    if loadgroup:
        for item in items:
            if (item.get_closest_marker("xdist_group")
                    and "@" not in item.nodeid.rpartition("]")[2]):
                item.stash[_UNGROUPED] = (
                    "--dist loadgroup ignored this test's xdist_group mark: "
                    "this pytest-xdist cannot group under this pytest (see "
                    "tests/conftest.py)")
    return result


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    if _UNGROUPED in item.stash:
        pytest.fail(item.stash[_UNGROUPED], pytrace=False)
