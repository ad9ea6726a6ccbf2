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


"""``cyborg-lite-api``: the development server on ``[api] host``/``port``.

Production runs ``cyborg_lite.wsgi:application`` under gunicorn instead.
"""

import sys

from werkzeug import serving

from cyborg_lite import service
from cyborg_lite.api import app as app_mod


def main(argv=None):
    """Serve the API until interrupted."""
    conf = service.prepare(sys.argv[1:] if argv is None else argv,
                           prog="cyborg-lite-api")
    app = app_mod.create_app(conf)
    serving.run_simple(conf.api.host, conf.api.port, app, threaded=True)


if __name__ == "__main__":
    main()
