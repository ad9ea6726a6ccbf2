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

"""cyborg_lite in the demo's own process, as the story runs it.

sqlite under the state directory, the sim driver on the example inventory
with one function image in its catalog, the embedded stack's Placement
and Ironic as its clients' endpoints, its API served on a free local port,
its agent embedded on the in-process transport, and this process's log in
a file (the walk owns stdout).
"""

import contextlib
import hashlib
import json
import logging
import os

from keystoneauth1 import loading as ks_loading

from accel_tools import devserver
from accel_tools import standalone
from accel_tools.demo import example_inventory
from accel_tools.embedded import placement as placement_launcher
from cyborg_lite import service
from cyborg_lite.agent import rpcapi
from cyborg_lite.agent import service as agent_service
from cyborg_lite.api import app as app_mod
from cyborg_lite.db import engine as db_engine


def start(directory, log_file, host, function_id, placement_url,
          ironic_url):
    """Configure, sync and serve cyborg_lite.

    :param directory: its state directory (created).
    :param log_file: where this process's logging goes from now on.
    :param host: the agent's ``[agent] host``.
    :param function_id: the function of the one image in its catalog.
    :returns: an :class:`InProcessCyborg`, serving.
    """
    os.makedirs(directory, exist_ok=True)
    _log_to_file(log_file)
    conf = service.new_conf()
    service.prepare([], conf=conf, default_config_files=[],
                    setup_logging=False)
    standalone.apply(conf)
    sets = {
        ("DEFAULT", "state_path"): directory,
        ("database", "connection"):
            f"sqlite:///{directory}/cyborg_lite.sqlite",
        ("agent", "host"): host,
        ("agent", "sim_state_dir"): os.path.join(directory, "sim"),
        ("agent", "sim_inventory_file"): _sim_inventory(directory, host),
        ("agent", "image_catalog_dir"): _image_catalog(directory,
                                                       function_id),
        ("agent", "sim_program_seconds"): 1.0,
    }
    for (group, name), value in sets.items():
        conf.set_override(name, value,
                          group=None if group == "DEFAULT" else group)
    placement_launcher.apply_client_conf(conf, "placement", placement_url)
    _apply_noauth_endpoint(conf, "ironic", ironic_url)
    db = db_engine.Database.from_conf(conf)
    db.sync()
    app = app_mod.create_app(conf, db=db)
    server = devserver.serve_in_thread(app)
    url = server.__enter__()
    return InProcessCyborg(conf, db, app, server, url)


class InProcessCyborg:
    """The in-process cyborg_lite: configuration, database, app, server."""

    def __init__(self, conf, db, app, server, url):
        self.conf, self.db, self.app = conf, db, app
        self.server, self.url = server, url
        self._agent = None
        self._agent_api = None

    def agent_api(self):
        """The RPC client of the agents, starting the embedded agent once
        (through the programmer when this build has one)."""
        if self._agent_api is None:
            programmer = getattr(self.app.extensions["cyborg_lite"],
                                 "programmer", None)
            if programmer is not None and getattr(programmer, "embedded",
                                                  False):
                self._agent_api = programmer.agent_api()
            else:
                self._agent = agent_service.start_embedded(self.conf)
                self._agent_api = rpcapi.AgentAPI(self.conf)
        return self._agent_api

    def close(self):
        """Stop serving, the programmer, the notifier and the agent."""
        services = self.app.extensions["cyborg_lite"]
        with contextlib.suppress(Exception):
            self.server.__exit__(None, None, None)
        with contextlib.suppress(Exception):
            services.stop()
        with contextlib.suppress(Exception):
            services.notifier.shutdown()
        if self._agent is not None:
            with contextlib.suppress(Exception):
                self._agent.stop()
        self.db.dispose()


def _sim_inventory(directory, host):
    """The host's in-band view for the sim driver: the example
    inventory, whose PCI addresses are the emulator's devices."""
    with open(example_inventory.find(), encoding="utf-8") as handle:
        document = json.load(handle)
    document["host"] = host
    path = os.path.join(directory, "host-devices.json")
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(document, handle, indent=2)
    return path


def _image_catalog(directory, function_id):
    """The standalone image catalog with one function image."""
    catalog = os.path.join(directory, "images")
    os.makedirs(catalog, exist_ok=True)
    content = f"demo bitstream for {function_id}\n".encode()
    with open(os.path.join(catalog, f"{function_id}.gbs"), "wb") as f:
        f.write(content)
    index = {"images": [{"id": f"img-{function_id}",
                         "function_id": function_id,
                         "file": f"{function_id}.gbs",
                         "sha256": hashlib.sha256(content).hexdigest()}]}
    with open(os.path.join(catalog, "index.json"), "w") as f:
        json.dump(index, f)
    return catalog


def _apply_noauth_endpoint(conf, group, url):
    """Point keystoneauth group ``group`` at ``url`` without auth (Ironic
    with ``auth_strategy = noauth``)."""
    ks_loading.register_auth_conf_options(conf, group)
    conf.set_override("auth_type", "none", group)
    conf.set_override("endpoint_override", url, group)


def _log_to_file(path):
    """Send this process's logging to ``path`` (the walk owns stdout)."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter(
        "%(asctime)s %(levelname)s %(name)s %(message)s"))
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
