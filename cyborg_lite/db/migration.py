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

"""Schema migrations (alembic), packaged so an installed cyborg_lite can
run ``cyborg-lite-manage db sync``."""

import os

from alembic import command
from alembic import config as alembic_config
from alembic import migration as alembic_migration
from alembic import script as alembic_script

_SCRIPT_LOCATION = os.path.join(os.path.dirname(__file__), "migrations")


def _config(connection):
    cfg = alembic_config.Config()
    cfg.set_main_option("script_location", _SCRIPT_LOCATION)
    cfg.attributes["connection"] = connection
    return cfg


def upgrade(engine, revision="head"):
    """Bring the schema of ``engine``'s database to ``revision``."""
    with engine.begin() as connection:
        command.upgrade(_config(connection), revision)


def current(engine):
    """The revision the database is at, or None when it has no schema."""
    with engine.connect() as connection:
        context = alembic_migration.MigrationContext.configure(connection)
        return context.get_current_revision()


def head():
    """The newest revision shipped with this code."""
    directory = alembic_script.ScriptDirectory(_SCRIPT_LOCATION)
    return directory.get_current_head()


def known():
    """Every revision shipped with this code."""
    directory = alembic_script.ScriptDirectory(_SCRIPT_LOCATION)
    return {script.revision for script in directory.walk_revisions()}
