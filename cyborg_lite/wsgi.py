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


"""WSGI entry point: ``cyborg_lite.wsgi:application`` (gunicorn, uWSGI,
mod_wsgi). The configuration is found as every command finds it
(:mod:`cyborg_lite.service`): ``--config-file``/``--config-dir`` on the
server's command line, else ``CYBORG_LITE_CONFIG``, else the default
search; the schema must already be synced (``cyborg-lite-manage db sync``;
until then the API answers 503 saying so). No state lives in the process,
so run as many workers as you like.

The configuration is read when the server loads ``application`` (a worker
as it boots); a file that cannot be parsed stops the server there, after
one line naming the file and the line. The app itself is built on the
first request, so loading it touches no database.
"""

import sys
import threading

from cyborg_lite import service
from cyborg_lite.api import app as app_mod


def _config_args(argv):
    """The ``--config-file``/``--config-dir`` options among the WSGI
    server's own arguments."""
    args = []
    for index, arg in enumerate(argv):
        if arg in service.CONFIG_OPTIONS and index + 1 < len(argv):
            args += [arg, argv[index + 1]]
        elif arg not in service.CONFIG_OPTIONS and (
                service.is_config_option(arg)):
            args.append(arg)
    return args


#: exit status of a WSGI server process whose configuration cannot be
#: parsed: gunicorn stops altogether ("Worker failed to boot") when a
#: worker exits with it, instead of starting the worker again.
BOOT_ERROR = 3


def load_configuration(argv=None):
    """The parsed configuration (:func:`cyborg_lite.service.prepare`).

    :raises SystemExit: 2 after one line naming the file and the line,
        when a configuration file cannot be parsed.
    """
    args = _config_args(sys.argv[1:] if argv is None else argv)
    return service.prepare(args, prog="cyborg-lite-wsgi-api")


def init_application(argv=None):
    """Build the WSGI application from the configuration."""
    return app_mod.create_app(load_configuration(argv))


class _LazyApplication:
    """Builds the app from ``conf`` on the first request, so loading it
    (as a gunicorn worker does when it boots) touches no database."""

    def __init__(self, conf):
        self._conf = conf
        self._app = None
        self._lock = threading.Lock()

    def __call__(self, environ, start_response):
        if self._app is None:
            with self._lock:
                if self._app is None:
                    self._app = app_mod.create_app(self._conf)
        return self._app(environ, start_response)


def __getattr__(name):
    # NOTE(cyborg_lite): reading the configuration when the server asks
    # for ``application``, not on import: importing this module (tests,
    # the docs) parses nothing and sets up no logging.
    if name != "application":
        raise AttributeError(f"module {__name__!r} has no attribute "
                             f"{name!r}")
    try:
        conf = load_configuration()
    except SystemExit as stop:
        raise SystemExit(BOOT_ERROR if stop.code == 2 else stop.code)
    application = _LazyApplication(conf)
    globals()["application"] = application
    return application
