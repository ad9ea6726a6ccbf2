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

"""Queries of the ``attributes`` table (the ``/v2/attributes`` API)."""

import uuid as uuidlib

import sqlalchemy as sa

from cyborg_lite import exception
from cyborg_lite.db import engine
from cyborg_lite.db import models


def _deployable_id(session, ident):
    """The integer id of the deployable ``ident`` (id or uuid), or None."""
    number = engine.integer_id(ident)
    if number is not None:
        column, value = models.Deployable.id, number
    elif isinstance(ident, str) and engine.is_uuid_like(ident):
        column, value = models.Deployable.uuid, str(uuidlib.UUID(ident))
    else:
        return None
    return session.execute(sa.select(models.Deployable.id).where(
        column == value)).scalar_one_or_none()


@engine.reader
def get_all(session, deployable=None, key=None, limit=None,
                   marker=None):
    """Attributes filtered in SQL.

    :param deployable: a deployable's integer id or uuid; an unknown one
        matches nothing.
    :param key: only attributes with this key.
    """
    stmt = sa.select(models.Attribute)
    if deployable is not None:
        deployable_id = _deployable_id(session, deployable)
        if deployable_id is None:
            return []
        stmt = stmt.where(models.Attribute.deployable_id == deployable_id)
    if key is not None:
        stmt = stmt.where(models.Attribute.key == key)
    return engine.paginate(session, stmt, models.Attribute, limit, marker)


@engine.reader
def get(session, attribute_uuid):
    """One attribute by uuid; :raises exception.AttributeNotFound:"""
    attribute = None
    if engine.is_uuid_like(attribute_uuid):
        attribute = session.execute(
            sa.select(models.Attribute).where(
                models.Attribute.uuid == str(uuidlib.UUID(attribute_uuid)))
        ).scalar_one_or_none()
    if attribute is None:
        raise exception.AttributeNotFound(uuid=attribute_uuid)
    return attribute


@engine.transactional
def create(session, deployable, key, value):
    """Add the attribute ``key = value`` to a deployable.

    :param deployable: the deployable's integer id or uuid.
    :raises exception.UnknownDeployable: (400) no such deployable.
    :raises exception.AttributeExists: (409) the deployable already has
        ``key``.
    :returns: the new attribute row.
    """
    deployable_id = _deployable_id(session, deployable)
    if deployable_id is None:
        raise exception.UnknownDeployable(ident=deployable)
    existing = session.execute(
        sa.select(models.Attribute.uuid).where(
            models.Attribute.deployable_id == deployable_id,
            models.Attribute.key == key)).scalar_one_or_none()
    if existing is not None:
        raise exception.AttributeExists(deployable=deployable, key=key,
                              uuid=existing)
    attribute = models.Attribute(uuid=engine.new_uuid(),
                                 deployable_id=deployable_id, key=key,
                                 value=value)
    session.add(attribute)
    session.flush()
    return attribute


@engine.transactional
def delete(session, attribute_uuid):
    """Delete one attribute; :raises exception.AttributeNotFound:"""
    attribute = get(session, attribute_uuid)
    session.delete(attribute)


def of_deployables(session, deployable_ids):
    """{deployable id: [(key, value)]}."""
    result = {}
    if not deployable_ids:
        return result
    rows = session.execute(
        sa.select(models.Attribute).where(
            models.Attribute.deployable_id.in_(deployable_ids))
        .order_by(models.Attribute.id)).scalars()
    for attr in rows:
        result.setdefault(attr.deployable_id, []).append(
            (attr.key, attr.value))
    return result
