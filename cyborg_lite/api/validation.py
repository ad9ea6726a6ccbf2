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


"""What any database and schema can take, checked once for every request.

Every body (:func:`cyborg_lite.api.common.json_body`), query value
(:func:`cyborg_lite.api.common.query`) and path segment (the app's
before-request hook) passes here before a handler sees it, so no handler
and no database meets a value it cannot store:

- JSON nested deeper than :data:`MAX_DEPTH` levels is refused before it is
  walked (Python's decoder itself fails on a few thousand levels);
- strings holding a lone UTF-16 surrogate (no database can store one) or
  NUL (PostgreSQL cannot) are refused, naming where;
- integers outside signed 64 bits, and NaN or infinities, are refused;
- :func:`integer_id` (:func:`cyborg_lite.db.engine.integer_id`) reads ids
  made of ASCII digits only (``"²"`` is a digit to ``str.isdigit()`` but
  not to ``int()``) within 64 bits, and refuses more digits than a 64-bit
  integer has before converting them (Python refuses to convert more than
  4,300 digits at all);
- :func:`check_fits` bounds a string by the column that stores it, counted
  as the strictest database counts (characters in a VARCHAR, UTF-8 bytes in
  MariaDB's TEXT), so what is accepted at creation can be stored and used
  later on every database.
"""

import json
import math
import re

import sqlalchemy as sa

from cyborg_lite import exception
from cyborg_lite.db import engine as db_engine

#: deepest nesting a request body may have; the deepest legitimate body (a
#: bind PATCH: object, list of ops, op, value) needs 4.
MAX_DEPTH = 32
INT64_MIN = -2 ** 63
INT64_MAX = db_engine.INT64_MAX

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def _reject_constant(name):
    raise ValueError(f"{name} is not a number JSON allows")


def _describe(text):
    char = _UNSTORABLE.search(text).group()
    return ("a NUL character" if char == "\x00"
            else f"a lone UTF-16 surrogate (U+{ord(char):04X})")


def check_string(where, text):
    """:raises Invalid: when ``text`` holds a character no database can
    store."""
    if _UNSTORABLE.search(text):
        raise exception.Invalid(
            reason=f"{where}: the string holds {_describe(text)}, which "
                   "cannot be stored")


def _check_tree(body):
    # NOTE(cyborg_lite): iterative; decode_body has bounded the depth on the
    # raw text already.
    pending = [(body, "body")]
    while pending:
        value, where = pending.pop()
        if isinstance(value, dict):
            for key, item in value.items():
                check_string(f"{where} key {key!r}", key)
                pending.append((item, f"{where}.{key}"))
        elif isinstance(value, list):
            for index, item in enumerate(value):
                pending.append((item, f"{where}[{index}]"))
        elif isinstance(value, str):
            check_string(where, value)
        elif isinstance(value, int) and not isinstance(value, bool):
            if not INT64_MIN <= value <= INT64_MAX:
                raise exception.Invalid(
                    reason=f"{where}: {value} is outside the 64-bit "
                           "integer range")
        elif isinstance(value, float) and not math.isfinite(value):
            raise exception.Invalid(reason=f"{where}: not a finite number")


def _max_depth(raw):
    """How deep ``raw`` JSON text nests, counted without decoding it."""
    depth = deepest = 0
    in_string = escaped = False
    for char in raw:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def decode_body(raw):
    """The decoded JSON of a request body, checked (see module doc).

    :param raw: the body's bytes.
    :raises Invalid: naming what is wrong.
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise exception.Invalid(
            reason=f"the body is not UTF-8 (byte {error.start})")
    if _max_depth(text) > MAX_DEPTH:
        raise exception.Invalid(
            reason=f"the body is nested deeper than {MAX_DEPTH} levels")
    try:
        body = json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as error:
        raise exception.Invalid(reason=f"the body must be JSON: {error}")
    _check_tree(body)
    return body


def check_query(name, value):
    """:raises InvalidParameter: for a query value no database can take."""
    if _UNSTORABLE.search(name) or _UNSTORABLE.search(value):
        raise exception.InvalidParameter(
            name=name.encode("utf-8", "backslashreplace").decode(),
            reason=f"holds {_describe(name + value)}, which cannot be "
                   "stored")


def check_path(values):
    """:raises Invalid: for a path segment no database can take."""
    for name, value in (values or {}).items():
        if isinstance(value, str):
            check_string(f"path {name}", value)


#: digits of the largest 64-bit integer: a longer run of digits (leading
#: zeros aside) is out of range without converting it.
INT64_DIGITS = len(str(INT64_MAX))
#: what MariaDB's TEXT holds, in bytes (PostgreSQL and sqlite hold more).
TEXT_BYTES = 65535


def integer_id(value):
    """``value`` as a 64-bit integer id, or None when it is not one
    (:func:`cyborg_lite.db.engine.integer_id`); a string of more digits
    than a 64-bit integer has is None without being converted."""
    if isinstance(value, str) and len(value.lstrip("0")) > INT64_DIGITS:
        return None
    return db_engine.integer_id(value)


def column_limit(column):
    """``(limit, unit)`` of what ``column`` (a model attribute) stores, as
    the strictest of the three databases counts it: a VARCHAR(n) holds n
    characters everywhere; a TEXT holds 65,535 bytes on MariaDB."""
    kind = column.type
    if isinstance(kind, sa.String) and kind.length:
        return kind.length, "characters"
    return TEXT_BYTES, "bytes"


def check_fits(where, text, column):
    """:raises Invalid: when ``text`` is longer than ``column`` stores,
    saying the limit and its unit."""
    limit, unit = column_limit(column)
    size = len(text) if unit == "characters" else len(text.encode("utf-8"))
    if size > limit:
        raise exception.Invalid(
            reason=f"{where}: {size} {unit}, longer than the {limit} "
                   f"{unit} the database stores")
