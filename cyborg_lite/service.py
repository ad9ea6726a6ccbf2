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


"""Configuration and logging set-up shared by the console scripts."""

from oslo_config import cfg
from oslo_log import log

from cyborg_lite import conf as conf_mod

PROJECT = "cyborg_lite"


def new_conf():
    """A fresh ConfigOpts with every cyborg_lite option registered."""
    conf = cfg.ConfigOpts()
    conf_mod.register_opts(conf)
    log.register_options(conf)
    return conf


def prepare(argv, conf=None, default_config_files=None,
            setup_logging=True):
    """Parse ``argv`` (and config files) into ``conf`` and set up logging.

    :returns: the parsed ConfigOpts.
    """
    conf = conf or new_conf()
    conf(argv, project=PROJECT, default_config_files=default_config_files)
    if setup_logging:
        log.setup(conf, PROJECT)
    return conf
