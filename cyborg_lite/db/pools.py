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

"""Queries of the ``function_pools`` table."""

import sqlalchemy as sa

from cyborg_lite.db import models


def get_all(session):
    """Every pool row, by name."""
    return list(session.execute(
        sa.select(models.FunctionPool)
        .order_by(models.FunctionPool.name)).scalars())


def get(session, name):
    """The pool row named ``name``, or None."""
    return session.execute(sa.select(models.FunctionPool).where(
        models.FunctionPool.name == name)).scalar_one_or_none()


def lock(session, name):
    """The pool row named ``name`` under an exclusive row lock (held
    until the transaction ends), or None."""
    return session.execute(
        sa.select(models.FunctionPool).where(
            models.FunctionPool.name == name).with_for_update()
    ).scalar_one_or_none()


def delete(session, name):
    """Delete the pool named ``name``; True when it existed."""
    return session.execute(sa.delete(models.FunctionPool).where(
        models.FunctionPool.name == name)).rowcount == 1
