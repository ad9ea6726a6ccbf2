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

"""A real openstack-placement served on a free port.

Placement's ``db_api.configure`` runs once per process, so the service runs
as a subprocess (``python -m accel_tools.embedded.placement CONFIG_DIR
DB_FILE``): its WSGI app is built from a config file (sqlite, ``[api]
auth_strategy = noauth2``, ``[placement_database] sync_on_startup = True``)
and served with wsgiref on a port the kernel picks; the child prints the
port on its first stdout line, and exits when its stdin closes, so a killed
parent leaves no Placement behind.

Clients reach it with keystoneauth's ``admin_token`` plugin (no catalog: the
endpoint serves every request)::

    [placement]
    auth_type = admin_token
    endpoint = http://127.0.0.1:PORT
    token = admin

:func:`client_conf_overrides` returns those settings,
:func:`apply_client_conf` applies them to a ConfigOpts and
:func:`client_conf_text` renders them for a configuration file.
"""

import os
import select
import subprocess
import sys
import tempfile
import threading
import uuid
from wsgiref import simple_server

from accel_tools.embedded import common

#: Placement microversion of the raw calls made by the helpers here.
MICROVERSION = "1.39"

_CONF_TEMPLATE = """\
[DEFAULT]
debug = False
log_file = {log_file}

[api]
auth_strategy = noauth2

[placement_database]
connection = {connection}
sync_on_startup = True

[oslo_policy]
policy_file = {policy_file}
"""

# NOTE(accel): the token "admin" gets only the admin role under noauth2,
# while the reshaper (flat -> nested migration) needs Placement's service
# role, as a real deployment grants cyborg's service user. The embedded
# server lets admin act as a service too.
_POLICY = """"service_api": "role:service or role:admin"
"""


def _db_dir():
    # NOTE(accel): sqlite commits on tmpfs skip the fsyncs that dominate
    # Placement's write latency on a disk; the data is throwaway anyway.
    return "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()


class PlacementServer:
    """A running Placement subprocess; ``url`` is its endpoint.

    :param workdir: directory for the configuration, policy and logs.
    :param db_file: the sqlite database; by default a uniquely named file
        on tmpfs (``/dev/shm``), removed by :meth:`stop`.
    :param port: the port to serve on; by default the kernel picks one at
        start. Choosing it up front makes ``url`` known before the start,
        so a client's configuration (Ironic's) can be written while
        Placement is still starting.
    :param connection: a SQLAlchemy URL of a database (MariaDB,
        PostgreSQL) to use instead of a sqlite file; it is left as it is.
    """

    def __init__(self, workdir, db_file=None, port=None, connection=None):
        self.workdir = workdir
        self.connection_url = connection
        self.db_file = None if connection else db_file or os.path.join(
            _db_dir(), f"placement-{uuid.uuid4().hex}.sqlite")
        self._remove_db = db_file is None and connection is None
        self.log_file = os.path.join(workdir, "placement.log")
        self.port = port
        self.process = None
        self.url = f"http://127.0.0.1:{port}" if port else None
        self._stderr = None

    def start(self, timeout=60):
        """Write the config, start the child and wait for its port.

        :returns: self.
        :raises RuntimeError: with the child's output when it does not
            start.
        """
        self.spawn()
        return self.wait_ready(timeout)

    def spawn(self):
        """Write the config and start the child; returns at once."""
        policy_file = os.path.join(self.workdir, "policy.yaml")
        with open(policy_file, "w") as f:
            f.write(_POLICY)
        with open(os.path.join(self.workdir, "placement.conf"), "w") as f:
            f.write(_CONF_TEMPLATE.format(
                log_file=self.log_file, policy_file=policy_file,
                connection=self.connection_url
                or f"sqlite:///{self.db_file}"))
        env = common.child_env(OS_PLACEMENT_CONFIG_DIR=self.workdir)
        self._stderr = open(self.log_file + ".err", "w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "accel_tools.embedded.placement",
             self.workdir, self.db_file or "-", str(self.port or 0)]
            + (["--remove-db"] if self._remove_db else []),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self._stderr, env=env, cwd=self.workdir, text=True)
        return self

    def wait_ready(self, timeout=60):
        """Wait until the child serves (it prints its port when it does).

        :returns: self.
        :raises RuntimeError: with the child's output when it does not
            start within ``timeout`` seconds.
        """
        if self.process is None:
            raise RuntimeError("placement is not running (spawn() first, or "
                               f"see its log):\n{self.log_tail()}")
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        line = self.process.stdout.readline().strip() if ready else ""
        if not line.isdigit():
            self.stop()
            raise RuntimeError(
                f"placement did not start: {line!r}\n{self.log_tail()}")
        self.url = f"http://127.0.0.1:{line}"
        return self

    def stop(self):
        """Stop the child (it serves nothing that must be flushed)."""
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process:
            self.process.stdin.close()
            self.process.stdout.close()
            self._stderr.close()
            self.process = None
        if self._remove_db:
            _remove_sqlite(self.db_file)

    def log_tail(self, lines=40):
        """The last lines of Placement's log and error output."""
        return common.log_tail(self.log_file, self.log_file + ".err",
                               lines=lines)

    def connection(self):
        """A new openstacksdk connection to this Placement (token
        ``admin``)."""
        import openstack

        return openstack.connect(
            auth_type="admin_token",
            auth={"token": "admin", "endpoint": self.url})


def _remove_sqlite(db_file):
    for suffix in ("", "-journal", "-wal", "-shm"):
        try:
            os.unlink(db_file + suffix)
        except OSError:
            pass


def client_conf_overrides(url):
    """``{option: value}`` pointing a keystoneauth group at ``url``."""
    return {"auth_type": "admin_token", "endpoint": url, "token": "admin"}


def client_conf_text(url, group="placement"):
    """The ``[group]`` section of a configuration file reaching ``url``."""
    lines = [f"[{group}]"] + [f"{k} = {v}" for k, v in
                              client_conf_overrides(url).items()]
    return "\n".join(lines) + "\n"


def apply_client_conf(conf, group, url):
    """Point the keystoneauth option group ``group`` of ``conf`` at ``url``.

    ``group`` must already hold the keystoneauth options
    (``accel_common.clients.register_client_opts``); the ``admin_token``
    plugin's own options are registered here, as a config file would load
    them.
    """
    from keystoneauth1 import loading as ks_loading

    ks_loading.register_auth_conf_options(conf, group)
    conf.set_override("auth_type", "admin_token", group)
    plugin_opts = ks_loading.get_auth_plugin_conf_options("admin_token")
    conf.register_opts(plugin_opts, group=group)
    conf.set_override("endpoint", url, group)
    conf.set_override("token", "admin", group)


def create_compute_node(conn, name=None, traits=()):
    """Create a compute-node resource provider, as nova-compute would.

    :param conn: an openstacksdk connection to Placement.
    :param name: the hypervisor host name; a unique one when omitted.
    :param traits: traits to set on it (e.g. ``COMPUTE_ACCELERATORS``, which
        nova-compute reports and Nova's scheduler requires for a flavor
        with a device profile); custom ones are created.
    :returns: ``(uuid, name)``.
    :raises RuntimeError: naming Placement's answer when a call fails.
    """
    name = name or f"compute-{uuid.uuid4().hex[:12]}.example.org"
    rp_uuid = str(uuid.uuid4())
    resp = conn.placement.post(
        "/resource_providers", json={"name": name, "uuid": rp_uuid},
        microversion=MICROVERSION)
    if resp.status_code != 200:
        raise RuntimeError(f"creating {name}: {resp.status_code} {resp.text}")
    if traits:
        set_traits(conn, rp_uuid, traits, generation=resp.json()["generation"])
    return rp_uuid, name


def set_traits(conn, rp_uuid, traits, generation=None):
    """Replace the traits of provider ``rp_uuid`` (custom ones created).

    :returns: the provider's new generation.
    :raises RuntimeError: naming Placement's answer when a call fails.
    """
    for trait in traits:
        if trait.startswith("CUSTOM_"):
            conn.placement.put(f"/traits/{trait}", microversion=MICROVERSION)
    if generation is None:
        generation = conn.placement.get(
            f"/resource_providers/{rp_uuid}",
            microversion=MICROVERSION).json()["generation"]
    resp = conn.placement.put(
        f"/resource_providers/{rp_uuid}/traits", microversion=MICROVERSION,
        json={"resource_provider_generation": generation,
              "traits": sorted(traits)})
    if resp.status_code != 200:
        raise RuntimeError(f"setting traits of {rp_uuid}: "
                           f"{resp.status_code} {resp.text}")
    return resp.json()["resource_provider_generation"]


class _QuietHandler(simple_server.WSGIRequestHandler):
    def log_message(self, *args):
        pass


def serve(config_dir, db_file, port=0, remove_db=False):
    """The child's main: serve Placement until stdin closes.

    :param port: 0 lets the kernel pick one.
    :param remove_db: remove the sqlite file then (a throwaway database).
    """
    os.environ["OS_PLACEMENT_CONFIG_DIR"] = config_dir
    from placement import wsgi
    app = wsgi.init_application()
    # NOTE(accel): a single thread; sqlite serialises writes anyway, and one
    # thread keeps Placement's own generation checks the only concurrency
    # control clients see (no "database is locked" from the file).
    server = simple_server.make_server(
        "127.0.0.1", port, app, handler_class=_QuietHandler)
    threading.Thread(target=_exit_with_parent,
                     args=(db_file if remove_db else None,),
                     daemon=True).start()
    print(server.server_port, flush=True)
    server.serve_forever()


def _exit_with_parent(db_file):
    sys.stdin.read()
    if db_file:
        _remove_sqlite(db_file)
    os._exit(0)


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2], port=int(sys.argv[3]),
          remove_db="--remove-db" in sys.argv[4:])
