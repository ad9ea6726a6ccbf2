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

"""Helpers shared by the launchers: ports, environment, log tails."""

import os
import pathlib
import socket
import time

#: The directory holding the ``ironic_accel`` package (a source tree's
#: root), put on a child's ``PYTHONPATH`` so it imports this very code even
#: when the project is not installed.
SOURCE_ROOT = str(pathlib.Path(__file__).resolve().parents[2])


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def ini(sections):
    """A configuration file's text from ``{section: {option: value}}``."""
    return "".join(
        f"[{section}]\n" + "".join(f"{name} = {value}\n"
                                   for name, value in options.items())
        for section, options in sections.items())


def child_env(**extra):
    """The environment of a child service process.

    The source root goes first on ``PYTHONPATH``; local services
    (emulators, image servers on 127.0.0.1) bypass any proxy the
    environment names.
    """
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [SOURCE_ROOT, env.get("PYTHONPATH")]))
    env["no_proxy"] = env["NO_PROXY"] = ",".join(
        filter(None, ["127.0.0.1,localhost", env.get("no_proxy")]))
    env.update(extra)
    return env


def log_tail(*paths, lines=40):
    """The last ``lines`` lines of each existing file in ``paths``."""
    parts = []
    for path in paths:
        try:
            with open(path, errors="replace") as handle:
                text = "".join(handle.readlines()[-lines:])
        except OSError:
            continue
        if text:
            parts.append(text)
    return "".join(parts)


class Stopwatch:
    """Records the seconds a ``with`` block took in ``timings[name]``."""

    def __init__(self, timings, name):
        self.timings = timings
        self.name = name
        self._began = None

    def __enter__(self):
        self._began = time.monotonic()
        return self

    def __exit__(self, *exc):
        self.timings[self.name] = time.monotonic() - self._began

