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

"""Files written whole or not at all (the CDI specs, the checkpoint)."""

import json
import os
import tempfile


def write_json_atomic(path, data, mode=0o644):
    """Write ``data`` as JSON to ``path``: a temporary file in the same
    directory, flushed to disk, renamed over ``path``. A reader (the
    container runtime, a restarted plugin) sees the old file or the new
    one, never a part."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    handle, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-",
                                   suffix=".json")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2, sort_keys=True)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def remove(path):
    """Remove ``path``; one already gone is fine."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
