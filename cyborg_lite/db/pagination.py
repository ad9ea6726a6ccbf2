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

"""Identifiers and pages of lists: what every table's queries share."""

import re
import uuid as uuidlib

from cyborg_lite import exception


def new_uuid():
    """A new random uuid as a string."""
    return str(uuidlib.uuid4())


def is_uuid_like(value):
    """True when ``value`` is a UUID string (with or without dashes)."""
    try:
        uuidlib.UUID(str(value))
    except ValueError:
        return False
    return True


INT64_MAX = 2 ** 63 - 1
_ASCII_DIGITS = re.compile(r"[0-9]+")


def integer_id(value):
    """``value`` as a 64-bit integer id, or None when it is not one: an int
    or a string of ASCII digits, from 0 to 2**63-1 (``"²"`` is a digit to
    ``str.isdigit()`` but not to ``int()``)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 <= value <= INT64_MAX else None
    if isinstance(value, str) and _ASCII_DIGITS.fullmatch(value):
        number = int(value)
        return number if number <= INT64_MAX else None
    return None


class Page(list):
    """One page of a list: the rows, and the marker of the next page when
    there may be more (None on the last page)."""

    next_marker = None


def paginate(session, stmt, model, limit, marker):
    """``stmt`` ordered by id, after ``marker`` (a uuid), at most ``limit``
    rows, as a :class:`Page`.

    The marker is looked up through ``stmt`` itself, so a uuid the caller's
    filters (its project) hide is exactly as unknown as one that exists
    nowhere.

    :raises InvalidParameter: no row ``stmt`` selects has the uuid
        ``marker``.
    """
    if marker is not None:
        marker_id = session.execute(
            stmt.with_only_columns(model.id).where(model.uuid == marker)
        ).scalar_one_or_none()
        if marker_id is None:
            raise exception.InvalidParameter(
                name="marker", reason=f"no item with uuid {marker}")
        stmt = stmt.where(model.id > marker_id)
    stmt = stmt.order_by(model.id)
    if limit is not None:
        stmt = stmt.limit(limit + 1)
    return as_page(session.execute(stmt).scalars(), limit)


def as_page(rows, limit):
    """A :class:`Page` of ``rows``, read with a limit of ``limit + 1`` (or
    none): the extra row only says that there is a next page."""
    page = Page(rows)
    if limit is not None and len(page) > limit:
        del page[limit:]
        page.next_marker = page[-1].uuid
    return page
