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


"""A threaded development server for in-process use (demo, tests)."""

import contextlib
import threading

from werkzeug import serving


@contextlib.contextmanager
def serve_in_thread(app, host="127.0.0.1", port=0):
    """Serve ``app`` in a daemon thread; yields the base URL.

    :param port: 0 lets the kernel pick a free port.
    """
    server = serving.make_server(host, port, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever,
                              name="cyborg-lite-api", daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
