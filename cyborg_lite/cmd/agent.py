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
from oslo_log import log as logging

from cyborg_lite.agent import service
from cyborg_lite.conf import agent as agent_conf
from cyborg_lite.conf import clients as clients_conf


def main(argv=None):
    """Parse the configuration and serve RPC until stopped."""
    conf = cfg.ConfigOpts()
    agent_conf.register_opts(conf)
    clients_conf.register_opts(conf)
    logging.register_options(conf)
    conf(sys.argv[1:] if argv is None else argv, project="cyborg_lite",
         prog="cyborg-lite-agent")
    logging.setup(conf, "cyborg_lite")
    service.run(conf)
    return 0


if __name__ == "__main__":
    sys.exit(main())
