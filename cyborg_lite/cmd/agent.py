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

"""``cyborg-lite-agent --config-file F``: the per-host agent process."""

import sys

from oslo_config import cfg
from oslo_db import exception as db_exc
from oslo_log import log as logging
from sqlalchemy import exc as sa_exc

from cyborg_lite import service as cyborg_service
from cyborg_lite.agent import privsep
from cyborg_lite.agent import service
from cyborg_lite.conf import agent as agent_conf
from cyborg_lite.conf import clients as clients_conf
from cyborg_lite.conf import database as database_conf
from cyborg_lite.db import schema

LOG = logging.getLogger(__name__)


def _check_schema(conf):
    """Refuse to start on a database behind the code, when this host's
    configuration names one (a host running the API too shares its file);
    an agent alone holds no database connection and checks nothing, nor
    does one installed without the driver of the database named (a
    warning says so)."""
    if not cyborg_service.database_configured(conf):
        return
    missing_driver = None
    try:
        problem = schema.Guard.from_conf(conf).problem()
    except ImportError as error:
        # NOTE(cyborg_lite): a compute host installs no database driver
        # (no extra): no API runs from this installation, so there is no
        # schema to keep in step with, and the agent never uses it.
        missing_driver = str(error)
    except (sa_exc.SQLAlchemyError, db_exc.DBError) as error:
        error = getattr(error, "inner_exception", None) or error
        reason = str(error.orig if getattr(error, "orig", None) else error)
        raise SystemExit(
            f"cyborg-lite-agent: cannot read the schema of the database "
            f"{cyborg_service.masked_database_url(conf)}: "
            f"{reason.splitlines()[0]}")
    if missing_driver is not None:
        LOG.warning("[database] connection names %s, whose driver is not "
                    "installed here (%s): its schema is not checked. The "
                    "agent uses no database; leave [database] out of a "
                    "compute host's configuration.",
                    cyborg_service.masked_database_url(conf), missing_driver)
    elif problem is not None:
        raise SystemExit(f"cyborg-lite-agent: {problem}")


def main(argv=None):
    """Parse the configuration and serve RPC until stopped."""
    conf = cfg.ConfigOpts()
    agent_conf.register_opts(conf)
    clients_conf.register_opts(conf)
    database_conf.register_opts(conf)
    logging.register_options(conf)
    cyborg_service.prepare(sys.argv[1:] if argv is None else argv,
                           conf=conf, prog="cyborg-lite-agent",
                           database_optional=True)
    _check_schema(conf)
    privsep.setup(conf)
    service.run(conf)
    return 0


if __name__ == "__main__":
    sys.exit(main())
