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

"""The checkpoint: what the plugin prepared, in
``<plugin_dir>/checkpoint.json``.

One record per claim uid: its namespace and name, its state (``binding``:
ARQs created and recorded, being bound; ``prepared``: bound, CDI spec
written; ``failed``), the ARQs it owns with the device each is for, and,
once prepared, the answer to give the kubelet and the CDI spec. Written
whole after every change (:func:`fileio.write_json_atomic`), so a
restarted plugin answers and unprepares what it prepared, and never creates
or binds a claim's ARQs twice.
"""

import copy
import json
import os
import threading

from cyborg_lite_dra import fileio

VERSION = 1
FILE_NAME = "checkpoint.json"

BINDING = "binding"
PREPARED = "prepared"
FAILED = "failed"


class CheckpointError(Exception):
    """The checkpoint file cannot be read; the message says why."""


class Checkpoint:
    """The records of one plugin directory.

    :raises CheckpointError: the file exists but is not a checkpoint of
        this version (the plugin refuses to start rather than forget what
        it prepared).
    """

    def __init__(self, plugin_dir):
        self.path = os.path.join(plugin_dir, FILE_NAME)
        self._lock = threading.Lock()
        self._claims = self._load()

    def _load(self):
        try:
            with open(self.path, encoding="utf-8") as f:
                data = json.load(f)
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as error:
            raise CheckpointError(
                f"cannot read the checkpoint {self.path}: {error}") from error
        version = data.get("version") if isinstance(data, dict) else None
        if version != VERSION or not isinstance(data.get("claims"), dict):
            raise CheckpointError(f"{self.path} is not a version {VERSION} "
                                  f"checkpoint (version {version!r})")
        return data["claims"]

    def _save(self):
        fileio.write_json_atomic(self.path, {"version": VERSION,
                                             "claims": self._claims},
                                 mode=0o600)

    def get(self, uid):
        """A copy of the record of claim ``uid``, or None."""
        with self._lock:
            record = self._claims.get(uid)
            return copy.deepcopy(record) if record is not None else None

    def put(self, uid, record):
        """Store the record of claim ``uid`` and write the file."""
        with self._lock:
            self._claims[uid] = copy.deepcopy(record)
            self._save()

    def drop(self, uid):
        """Forget claim ``uid`` (none is fine) and write the file."""
        with self._lock:
            if self._claims.pop(uid, None) is not None:
                self._save()

    def uids(self):
        """The claim uids recorded."""
        with self._lock:
            return sorted(self._claims)

    def allocated(self):
        """``{claim uid: resource provider uuids}``: the providers of the
        devices the scheduler allocated to each recorded claim."""
        with self._lock:
            return {uid: sorted({entry["rp_uuid"] for entry in
                                 record.get("arqs", {}).values()})
                    for uid, record in self._claims.items()}
