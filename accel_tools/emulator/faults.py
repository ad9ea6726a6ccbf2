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


"""The fault and inspection API of the emulator (not under /redfish).

No authentication: it is a test control channel, like sushy-tools' own.

- ``PUT /emulator/faults`` with any of ``task_exception`` (bool),
  ``version_unchanged`` (bool), ``unavailable_seconds`` (float),
  ``task_seconds`` (float); ``GET /emulator/faults`` shows them.
- ``GET /emulator/requests`` lists the modifying /redfish requests received;
  ``DELETE /emulator/requests`` clears the list.
- ``GET /emulator/state`` returns the whole state.
- ``PUT /emulator/systems/<id>/devices`` replaces a system's devices.
"""

import flask

from accel_tools.emulator import exception

blueprint = flask.Blueprint("emulator", __name__, url_prefix="/emulator")


def _state():
    return flask.current_app.extensions["ironic_accel_emulator"]


def _body():
    body = flask.request.get_json(silent=True)
    if body is None:
        raise exception.BadRequest("the request body must be JSON")
    return body


@blueprint.errorhandler(exception.BadRequest)
def _bad_request(exc):
    return flask.jsonify(error=str(exc)), 400


@blueprint.errorhandler(ValueError)
def _invalid(exc):
    return flask.jsonify(error=str(exc)), 400


@blueprint.route("/faults", methods=["GET"])
def get_faults():
    """The faults in force."""
    return flask.jsonify(_state().faults())


@blueprint.route("/faults", methods=["PUT"])
def put_faults():
    """Change some faults; the others keep their value."""
    return flask.jsonify(_state().set_faults(_body()))


@blueprint.route("/requests", methods=["GET"])
def get_requests():
    """Every POST/PATCH/PUT/DELETE received under /redfish, oldest first."""
    return flask.jsonify(_state().requests())


@blueprint.route("/requests", methods=["DELETE"])
def delete_requests():
    """Forget the recorded requests."""
    _state().clear_requests()
    return "", 204


@blueprint.route("/state", methods=["GET"])
def get_state():
    """The whole state document, tasks advanced to now."""
    return flask.jsonify(_state().snapshot(include_requests=True))


@blueprint.route("/systems/<sid>/devices", methods=["PUT"])
def put_devices(sid):
    """Replace the device inventory of a system (a JSON list of devices)."""
    _state().set_devices(sid, _body())
    return flask.jsonify(_state().snapshot()["systems"][sid]["devices"])
