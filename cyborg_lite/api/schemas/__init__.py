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


"""JSON schemas of request bodies, one module per resource
(:mod:`.accelerator_requests`, :mod:`.device_profiles`, :mod:`.deployables`,
:mod:`.attributes`), and :func:`validate`, which checks a body against one."""

import jsonschema

from cyborg_lite import exception

#: id(schema) -> validator; schemas are module constants.
_VALIDATORS = {}


def _where(error):
    path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}"
                   for p in error.absolute_path)
    return "body" + path


def validate(schema, body):
    """Check ``body`` against ``schema``.

    :raises Invalid: naming the first bad field.
    """
    validator = _VALIDATORS.get(id(schema))
    if validator is None:
        validator = _VALIDATORS[id(schema)] = \
            jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(body),
                    key=lambda e: (len(e.absolute_path),
                                   list(map(str, e.absolute_path))))
    if errors:
        error = errors[0]
        raise exception.Invalid(reason=f"{_where(error)}: {error.message}")
    return body
