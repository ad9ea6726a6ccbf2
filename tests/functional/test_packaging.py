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

"""The package as a deployer installs it: a wheel built from a clean clone
of the committed tree, installed into an empty venv with only
``-c constraints.txt`` (constraints pin versions but install nothing, so a
requirement missing from requirements.txt shows here), then every console
script, ``db sync`` on sqlite, the WSGI application and the oslo
configuration and policy entry points. A second venv adds ``ironic``, where
the Ironic plugin's entry points load.

The venvs are built once per test session, shared by the xdist workers
under a file lock. Uncommitted changes are not in the wheel (a release is
built from a commit).
"""

import configparser
import contextlib
import fcntl
import json
import os
import pathlib
import subprocess
import sys
import venv
import zipfile

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
CONSTRAINTS = REPO / "constraints.txt"
#: the database drivers and WSGI server extras a deployment installs
#: (psycopg2 builds from source once; pip's wheel cache keeps it).
EXTRAS = "mysql,postgresql,wsgi"
#: pip's own cache and wheel directories are used; no index is bypassed.
PIP = ["-m", "pip", "--disable-pip-version-check", "-q"]


def _run(args, timeout=600, **kwargs):
    """Run ``args``; fail the test with its output when it exits non-zero."""
    result = subprocess.run([str(a) for a in args], capture_output=True,
                            text=True, timeout=timeout, **kwargs)
    if result.returncode:
        pytest.fail(f"{' '.join(map(str, args))} exited "
                    f"{result.returncode}:\n{result.stdout}\n"
                    f"{result.stderr}")
    return result


@contextlib.contextmanager
def _locked(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def shared_dir(tmp_path_factory):
    """A directory every xdist worker of this session sees."""
    root = tmp_path_factory.getbasetemp()
    if "PYTEST_XDIST_WORKER" in os.environ:
        root = root.parent
    return root / "packaging"


@pytest.fixture(scope="session")
def wheel(shared_dir):
    """The wheel built from a clone of the committed HEAD."""
    with _locked(shared_dir / "wheel.lock"):
        built = sorted((shared_dir / "dist").glob("*.whl"))
        if built:
            return built[0]
        head = _run(["git", "-C", REPO, "rev-parse", "HEAD"]).stdout.strip()
        clone = shared_dir / "clone"
        _run(["git", "clone", "-q", "--no-checkout", REPO, clone])
        _run(["git", "-C", clone, "checkout", "-q", head])
        _run([sys.executable, *PIP, "wheel", "--no-deps", "-w",
              shared_dir / "dist", clone])
        return sorted((shared_dir / "dist").glob("*.whl"))[0]


def _venv(shared_dir, name, wheel, *extra):
    """An empty venv with ``wheel[EXTRAS]`` and ``extra`` installed under
    the constraints only; its bin directory."""
    target = shared_dir / name
    with _locked(shared_dir / f"{name}.lock"):
        done = target / ".installed"
        if not done.exists():
            venv.EnvBuilder(with_pip=True, clear=True).create(target)
            # NOTE(packaging): --no-compile: byte-compiling every installed
            # module is a third of the install's time, and pip ignores
            # what fails to compile anyway; what runs compiles on import.
            _run([target / "bin" / "python", *PIP, "install", "--no-compile",
                  "-c", CONSTRAINTS, f"{wheel}[{EXTRAS}]", *extra],
                 timeout=900)
            done.touch()
    return target / "bin"


@pytest.fixture(scope="session")
def plain(shared_dir, wheel):
    """bin/ of a venv with the wheel only (no Ironic)."""
    return _venv(shared_dir, "venv-plain", wheel)


@pytest.fixture(scope="session")
def with_ironic(shared_dir, wheel):
    """bin/ of a venv with the wheel beside ``pip install ironic``."""
    return _venv(shared_dir, "venv-ironic", wheel, "ironic")


def _entry_points(wheel):
    """``{group: {name: target}}`` of the wheel's entry_points.txt."""
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist()
                    if n.endswith(".dist-info/entry_points.txt"))
        parser = configparser.ConfigParser(interpolation=None)
        parser.optionxform = str
        parser.read_string(archive.read(name).decode())
    return {group: dict(parser[group]) for group in parser.sections()}


def _metadata(wheel):
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist()
                    if n.endswith(".dist-info/METADATA"))
        return archive.read(name).decode()


def test_wheel_declares_a_release_version_and_the_extras(wheel):
    metadata = _metadata(wheel)
    version = next(line.split(": ", 1)[1] for line in metadata.splitlines()
                   if line.startswith("Version: "))

    assert not version.startswith("0.0."), version
    for extra in ("mysql", "postgresql", "wsgi"):
        assert f"Provides-Extra: {extra}" in metadata
    assert 'PyMySQL>=1.1; extra == "mysql"' in metadata
    assert 'psycopg2>=2.9; extra == "postgresql"' in metadata
    assert 'gunicorn>=22.0; extra == "wsgi"' in metadata
    assert "oslo.service[threading]" in metadata


def test_installed_requirements_are_consistent(plain):
    _run([plain / "python", "-m", "pip", "check"])


def test_every_module_imports_without_ironic(plain):
    """Every import of cyborg_lite and accel_common is declared (the
    alembic environment and ``__main__`` modules run, not import)."""
    script = ("import importlib, pkgutil\n"
              "import accel_common, cyborg_lite\n"
              "for package in (accel_common, cyborg_lite):\n"
              "    prefix = package.__name__ + '.'\n"
              "    for info in pkgutil.walk_packages(package.__path__,\n"
              "                                      prefix):\n"
              "        if not info.name.endswith(('__main__',\n"
              "                                   'migrations.env')):\n"
              "            importlib.import_module(info.name)\n")
    _run([plain / "python", "-c", script], cwd=plain)


def test_every_console_script_answers_help(plain, wheel):
    scripts = {**_entry_points(wheel)["console_scripts"],
               **_entry_points(wheel).get("wsgi_scripts", {})}
    scripts.pop("ironic-accel-manage")  # needs Ironic: see below

    assert "cyborg-lite-api" in scripts
    for name in scripts:
        result = _run([plain / name, "--help"], cwd=plain)
        assert "usage" in result.stdout.lower(), (name, result.stdout)


def test_ironic_manage_without_ironic_says_where_it_runs(plain):
    result = subprocess.run([plain / "ironic-accel-manage", "--help"],
                            capture_output=True, text=True, timeout=60)

    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert result.stderr.strip() == (
        "ironic-accel-manage runs on an Ironic conductor host (in the "
        "Python environment Ironic is installed in); the 'ironic' package "
        "is not installed here.")


def _config(tmp_path, db_url):
    config = tmp_path / "cyborg_lite.conf"
    config.write_text(f"[DEFAULT]\nstate_path = {tmp_path}\n"
                      f"[database]\nconnection = {db_url}\n"
                      # NOTE(packaging): the 401 names where to get a token.
                      "[keystone_authtoken]\n"
                      "www_authenticate_uri = http://127.0.0.1:5000/v3\n")
    return config


def test_db_sync_then_the_wsgi_application(plain, tmp_path, db_url):
    """The shipped defaults (Keystone, no in-process agent), on each
    database through the driver its extra installs: the versions document
    is public, the rest asks for a token."""
    config = _config(tmp_path, db_url)
    _run([plain / "cyborg-lite-manage", "--config-file", config, "db",
          "sync"], cwd=tmp_path)
    script = (
        "import json, sys, wsgiref.util\n"
        "from cyborg_lite import wsgi\n"
        "app = wsgi.init_application(['--config-file', sys.argv[1]])\n"
        "statuses = {}\n"
        "for path in ('/', '/v2/device_profiles'):\n"
        "    environ = {'PATH_INFO': path}\n"
        "    wsgiref.util.setup_testing_defaults(environ)\n"
        "    def start(status, headers, exc_info=None):\n"
        "        statuses[path] = (status, dict(headers))\n"
        "    b''.join(app(environ, start))\n"
        "app.extensions['cyborg_lite'].stop()\n"
        "print(json.dumps(statuses))\n")
    result = _run([plain / "python", "-c", script, config], cwd=tmp_path)
    statuses = json.loads(result.stdout.strip().splitlines()[-1])

    assert statuses["/"][0].startswith("200")
    assert statuses["/v2/device_profiles"][0].startswith("401")


def test_oslo_config_generator_namespace(plain, tmp_path):
    result = _run([plain / "oslo-config-generator", "--namespace",
                   "cyborg_lite"], cwd=tmp_path)

    assert "#auth_strategy = keystone" in result.stdout
    assert "[database]" in result.stdout


def test_oslopolicy_sample_generator_namespace(plain, tmp_path):
    result = _run([plain / "oslopolicy-sample-generator", "--namespace",
                   "cyborg_lite"], cwd=tmp_path)

    assert '"cyborg:arq:create"' in result.stdout


def test_ironic_plugin_entry_points_load_beside_ironic(with_ironic, wheel):
    points = _entry_points(wheel)
    script = (
        "import sys\n"
        "from importlib import metadata\n"
        "groups = sys.argv[1:]\n"
        "for group in groups:\n"
        "    found = [ep for ep in metadata.entry_points(group=group)\n"
        "             if ep.value.startswith('ironic_accel')]\n"
        "    assert found, group\n"
        "    for ep in found:\n"
        "        ep.load()\n"
        "        print(group, ep.name)\n")
    groups = [g for g in points if g.startswith("ironic.")]
    result = _run([with_ironic / "python", "-c", script, *groups],
                  cwd=with_ironic)

    assert groups and len(result.stdout.splitlines()) == sum(
        len(points[g]) for g in groups)
    help_ = _run([with_ironic / "ironic-accel-manage", "--help"],
                 cwd=with_ironic)
    assert "placement" in help_.stdout
    sample = _run([with_ironic / "oslo-config-generator", "--namespace",
                   "ironic_accel"], cwd=with_ironic)
    assert "[" in sample.stdout
