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

"""The settings :class:`~cyborg_lite.db.backends.EnginePlugin` gives the
engines oslo.db builds, through SQLAlchemy's public plugin hooks."""

import pytest
import sqlalchemy as sa

from cyborg_lite.db import backends
from cyborg_lite.db import engine as db_engine


def _plugin(url):
    return backends.EnginePlugin(sa.engine.make_url(url), {})


def test_connection_parameters_name_the_plugin():
    assert backends.connection_parameters("") == "plugin=cyborg_lite"
    assert backends.connection_parameters("charset=utf8mb4") == \
        "charset=utf8mb4&plugin=cyborg_lite"
    assert backends.connection_parameters("", autocommit=True) == \
        "plugin=cyborg_lite&cyborg_lite_autocommit=1"


@pytest.mark.parametrize("url, reset", [
    ("mysql+pymysql://u@h/db", None),
    ("mysql+pymysql://u@h/db?cyborg_lite_autocommit=1", "default"),
    ("postgresql+psycopg2://u@h/db", "default"),
])
def test_pool_without_pre_ping_lifo_and_reset_only_where_needed(url, reset):
    pool_args = {"pre_ping": True}
    _plugin(url).handle_pool_kwargs(sa.pool.QueuePool, pool_args)
    assert pool_args["pre_ping"] is False
    assert pool_args["use_lifo"] is True
    assert pool_args.get("reset_on_return", "default") == reset


def test_autocommit_is_a_dialect_argument_and_leaves_the_url():
    url = sa.engine.make_url(
        "mysql+pymysql://u@h/db?cyborg_lite_autocommit=1&charset=utf8")
    plugin = backends.EnginePlugin(url, {})
    dialect_args = {}
    plugin.handle_dialect_kwargs(None, dialect_args)
    assert dialect_args == {"isolation_level": "AUTOCOMMIT",
                            "skip_autocommit_rollback": True}
    assert dict(plugin.update_url(url).query) == {"charset": "utf8"}
    dialect_args = {}
    _plugin("mysql+pymysql://u@h/db").handle_dialect_kwargs(
        None, dialect_args)
    assert dialect_args == {}


@pytest.mark.parametrize("url, engines", [
    ("mysql+pymysql://u:p@127.0.0.1:9/db", 2),
    ("postgresql+psycopg2://u:p@127.0.0.1:9/db", 2),
])
def test_server_engines_come_from_enginefacade_with_the_plugin(url, engines):
    # Nothing listens on port 9: building the engines connects to nothing.
    db = db_engine.Database(
        url, {"connection_parameters": "connect_timeout=3"})
    try:
        assert len(db.engines) == engines
        for engine in db.engines:
            # The plugin consumed its parameters; the user's stay.
            assert dict(engine.url.query) == {"connect_timeout": "3"}
    finally:
        db.dispose()


def test_sqlite_needs_no_plugin(tmp_path):
    db = db_engine.Database(f"sqlite:///{tmp_path}/x.sqlite")
    try:
        assert db.engines == (db.engine,)
        assert not db.engine.url.query
    finally:
        db.dispose()
