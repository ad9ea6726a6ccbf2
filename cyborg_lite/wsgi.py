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


def init_application(argv=None):
    """Build the WSGI application from the configuration."""
    args = _config_args(sys.argv[1:] if argv is None else argv)
    conf = service.prepare(args, prog="cyborg-lite-wsgi-api")
    return app_mod.create_app(conf)


class _LazyApplication:
    """Builds the app on the first request, so importing this module (as
    gunicorn's master does before forking) touches no database."""

    def __init__(self):
        self._app = None
        self._lock = threading.Lock()

    def __call__(self, environ, start_response):
        if self._app is None:
            with self._lock:
                if self._app is None:
                    self._app = init_application()
        return self._app(environ, start_response)


application = _LazyApplication()
