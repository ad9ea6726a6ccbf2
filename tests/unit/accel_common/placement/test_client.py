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

import json

import pytest
import requests

from accel_common import exception
from accel_common.placement import client


def _response(status, body):
    resp = requests.Response()
    resp.status_code = status
    resp._content = (json.dumps(body) if isinstance(body, dict)
                     else body).encode()
    return resp


def test_conflict_error_names_call_and_code():
    error = exception.PlacementError("PUT", "/resource_providers/x/traits",
                                  _response(409, {"errors": [{
                                      "status": 409,
                                      "code": "placement.concurrent_update",
                                      "detail": "generation conflict"}]}))
    assert error.is_conflict
    assert str(error) == (
        "Placement PUT /resource_providers/x/traits answered 409 "
        "(placement.concurrent_update): generation conflict")


def test_other_409_is_not_retried():
    error = exception.PlacementError("PUT", "/x", _response(409, {"errors": [{
        "code": "placement.inventory.inuse", "detail": "in use"}]}))
    assert not error.is_conflict


def test_a_500_to_a_generation_checked_write_is_retried():
    # Placement 16 lets ResourceProviderConcurrentUpdateDetected escape as a
    # 500 when two PUTs of one provider's traits race (seen under a storm of
    # real Nova boots).
    body = {"errors": [{"status": 500, "detail": "server error"}]}
    assert exception.PlacementError(
        "PUT", "/resource_providers/x/traits", _response(500, body)
    ).is_conflict
    assert exception.PlacementError(
        "PUT", "/resource_providers/x/inventories", _response(500, body)
    ).is_conflict
    assert not exception.PlacementError(
        "PUT", "/allocations/x", _response(500, body)).is_conflict
    assert not exception.PlacementError(
        "GET", "/resource_providers/x/traits", _response(500, body)
    ).is_conflict


def test_non_json_error_keeps_the_text():
    error = exception.PlacementError("GET", "/x",
                                     _response(502, "bad gateway"))
    assert error.code is None
    assert "answered 502: bad gateway" in str(error)


def test_snapshot_only_at_the_remembered_generation():
    c = client.Client(conn=None)
    c.remember("rp", 3, {"FPGA": {"total": 1}}, {"OWNER_CYBORG"})
    assert c.snapshot("rp", 3) == ({"FPGA": {"total": 1}}, {"OWNER_CYBORG"})
    assert c.snapshot("rp", 4) is None
    assert c.snapshot("other", 3) is None


def _conflict():
    return exception.PlacementError("PUT", "/x", _response(409, {"errors": [{
        "code": exception.CONCURRENT_UPDATE, "detail": "generation"}]}))


class _Attempts:
    """An attempt that fails (or re-reads) as told, then returns 'done'."""

    def __init__(self, *before):
        self.before = list(before)
        self.calls = 0

    def __call__(self):
        self.calls += 1
        if self.before:
            step = self.before.pop(0)
            if step is client.REREAD:
                return step
            raise step
        return "done"


class _GaveUp(Exception):
    pass


def test_retry_on_conflict_reruns_after_conflict_and_reread():
    c = client.Client(conn=None)
    attempt = _Attempts(_conflict(), client.REREAD)
    assert c.retry_on_conflict(attempt, 2, "rp", "testing",
                               gave_up=_GaveUp) == "done"
    assert (attempt.calls, c.conflicts) == (3, 1)


def test_retry_on_conflict_gives_up_after_retries_plus_one():
    c = client.Client(conn=None)
    last = _conflict()
    attempt = _Attempts(_conflict(), client.REREAD, last, "unused")
    seen = []

    def gave_up(conflict):
        seen.append(conflict)
        return _GaveUp("kept changing")

    with pytest.raises(_GaveUp, match="kept changing"):
        c.retry_on_conflict(attempt, 2, "rp", "testing", gave_up=gave_up)
    assert attempt.calls == 3
    assert seen == [last]


def test_retry_on_conflict_raises_other_refusals_at_once():
    c = client.Client(conn=None)
    gone = exception.PlacementError("GET", "/x", _response(404, "gone"))
    attempt = _Attempts(gone)
    with pytest.raises(exception.PlacementError) as raised:
        c.retry_on_conflict(attempt, 4, "rp", "testing", gave_up=_GaveUp)
    assert raised.value is gone
    assert (attempt.calls, c.conflicts) == (1, 0)
