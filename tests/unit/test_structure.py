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

"""The package map of doc/source/architecture.rst, enforced.

Read from the source with :mod:`ast` (nothing is imported): which project
modules import which, where in the file, and what third-party packages
each half depends on.
"""

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGES = ("accel_common", "ironic_accel", "cyborg_lite", "accel_tools",
            "cyborg_lite_dra")

#: package -> the project packages it may import (besides itself).
MAY_IMPORT = {
    "accel_common": set(),
    "ironic_accel": {"accel_common"},
    "cyborg_lite": {"accel_common"},
    "accel_tools": {"accel_common", "ironic_accel", "cyborg_lite",
                    "cyborg_lite_dra"},
    # NOTE(structure): a client of cyborg_lite's HTTP API, as Nova is.
    "cyborg_lite_dra": {"accel_common"},
}

#: package -> third-party top-level packages it must not import.
MUST_NOT_IMPORT = {
    "accel_common": {"ironic", "flask", "sushy"},
    "cyborg_lite": {"ironic", "sushy"},
    "cyborg_lite_dra": {"ironic", "sushy", "flask", "sqlalchemy"},
}

#: ``module: why`` for the only function-level imports of project modules
#: allowed: optional pieces a tool loads only when asked for.
LAZY_IMPORTS_ALLOWED = {}


def _modules():
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imports(module, path):
    """``[(imported module, lineno, at top level)]`` of ``module``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    top = set(map(id, tree.body))
    package = module if path.name == "__init__.py" else \
        module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # NOTE(structure): "from pkg import mod" imports pkg.mod.
            names = [f"{base}.{alias.name}"
                     if f"{base}.{alias.name}" in MODULES else base
                     for alias in node.names]
        else:
            continue
        for name in names:
            found.append((name, node.lineno, id(node) in top))
    return found


IMPORTS = {module: _imports(module, path) for module, path in MODULES.items()}


def _project(name):
    return name.split(".")[0] in PACKAGES


def test_no_function_level_import_of_project_modules():
    lazy = [f"{MODULES[module].relative_to(ROOT)}:{line} imports {name}"
            for module, found in IMPORTS.items()
            for name, line, at_top in found
            if not at_top and _project(name)
            and module not in LAZY_IMPORTS_ALLOWED]
    assert not lazy, ("import the project's modules at the top of the "
                      "file (a lazy import hides a cycle):\n"
                      + "\n".join(lazy))


def test_packages_import_only_what_the_map_allows():
    wrong = []
    for module, found in IMPORTS.items():
        package = module.split(".")[0]
        for name, line, _ in found:
            top = name.split(".")[0]
            where = f"{MODULES[module].relative_to(ROOT)}:{line}"
            if top in PACKAGES and top != package and \
                    top not in MAY_IMPORT[package]:
                wrong.append(f"{where}: {package} imports {name}")
            if top in MUST_NOT_IMPORT.get(package, ()):
                wrong.append(f"{where}: {package} imports {top}")
    assert not wrong, "\n".join(wrong)


def _cycles(graph):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, result = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                result.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return result


def test_no_import_cycles():
    graph = {module: {name for name, _, _ in found
                      if name in MODULES and name != module}
             for module, found in IMPORTS.items()}
    assert _cycles(graph) == []


@pytest.mark.parametrize("graph, expected", [
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, [["a", "b", "c"]]),
    ({"a": {"b"}, "b": set()}, []),
])
def test_the_cycle_finder_finds_cycles(graph, expected):
    assert _cycles(graph) == expected
