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


"""Configuration and logging set-up shared by every command.

Every command (``cyborg-lite-api``, ``cyborg-lite-agent``,
``cyborg-lite-manage``) and the WSGI application find their configuration
the same way, here:

1. ``--config-file`` / ``--config-dir`` when given on the command line;
2. else ``CYBORG_LITE_CONFIG``: a file, a directory of ``*.conf`` files,
   or several of either separated by commas;
3. else oslo.config's default search (``~/.cyborg_lite/``, ``~/``,
   ``/etc/cyborg_lite/``, ``/etc/`` for ``cyborg_lite.conf``).

Each logs at start which files it read and which database it uses.
"""

import glob
import os
import sys

from oslo_config import cfg
from oslo_log import log
from sqlalchemy.engine import url as sa_url

from cyborg_lite import conf as conf_mod
from cyborg_lite import log_limits

PROJECT = "cyborg_lite"
#: the environment variable naming the configuration (see module doc).
CONFIG_ENV = "CYBORG_LITE_CONFIG"

LOG = log.getLogger(__name__)


def new_conf():
    """A fresh ConfigOpts with every cyborg_lite option registered."""
    conf = cfg.ConfigOpts()
    conf_mod.register_opts(conf)
    log.register_options(conf)
    return conf


#: the command-line options naming configuration.
CONFIG_OPTIONS = ("--config-file", "--config-dir")


def is_config_option(arg):
    """Is ``arg`` one of :data:`CONFIG_OPTIONS` (``--opt`` or
    ``--opt=value``)?"""
    return arg in CONFIG_OPTIONS or arg.startswith(
        tuple(f"{option}=" for option in CONFIG_OPTIONS))


def _names_config(argv):
    return any(is_config_option(arg) for arg in argv)


def config_from_environment(environ=None):
    """``(files, dirs)`` named by ``CYBORG_LITE_CONFIG``, or None.

    :raises SystemExit: when it names something that does not exist, so a
        typo never silently falls back to another configuration.
    """
    value = (environ if environ is not None else os.environ).get(CONFIG_ENV)
    if not value or not value.strip():
        return None
    files, dirs = [], []
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        if os.path.isdir(item):
            dirs.append(item)
        elif os.path.isfile(item):
            files.append(item)
        else:
            raise SystemExit(f"{CONFIG_ENV} names {item!r}, which is neither "
                             f"a file nor a directory.")
    return files, dirs


def masked_database_url(conf):
    """``[database] connection`` with its password hidden."""
    try:
        return sa_url.make_url(conf.database.connection).render_as_string(
            hide_password=True)
    except Exception:
        return "<unparsable [database] connection>"


def database_configured(conf):
    """True when the configuration sets ``[database] connection``."""
    location = conf.get_location("connection", "database")
    # NOTE(cyborg_lite): oslo.db's option: cyborg_lite's default for it is
    # a set_default.
    return location is not None and location.location not in (
        cfg.Locations.opt_default, cfg.Locations.set_default)


def describe(conf, database_optional=False):
    """One line: the configuration files read and the database used.

    :param database_optional: the command uses a database only when the
        configuration names one (the agent).
    """
    read = list(conf.config_file or ())
    for directory in conf.config_dir or ():
        read += sorted(glob.glob(os.path.join(directory, "*.conf")))
    files = ", ".join(read) if read else "none (built-in defaults)"
    line = f"configuration files: {files}"
    if "database" in conf:
        if database_optional and not database_configured(conf):
            line += "; database: none"
        else:
            line += f"; database: {masked_database_url(conf)}"
    return line


def prepare(argv, conf=None, default_config_files=None,
            setup_logging=True, prog=None, database_optional=False,
            announce=None):
    """Parse ``argv`` and the configuration files into ``conf``, set up
    logging and log what was read (see the module doc for the order).

    :param default_config_files: files to read when neither the command
        line nor the environment names any (tests); None: oslo.config's
        default search.
    :param announce: called with the line saying what was read; default:
        logged at INFO (``cyborg-lite-manage`` writes it to stderr, keeping
        stdout for its output).
    :returns: the parsed ConfigOpts.
    :raises SystemExit: code 2 after one line on stderr naming the file
        and line, when a configuration file cannot be parsed.
    """
    conf = conf or new_conf()
    default_config_dirs = None
    if not _names_config(argv):
        named = config_from_environment()
        if named is not None:
            default_config_files, default_config_dirs = named
    try:
        conf(argv, project=PROJECT, prog=prog,
             default_config_files=default_config_files,
             default_config_dirs=default_config_dirs)
    except cfg.ConfigFileParseError as error:
        # NOTE(docs): oslo.config's message already names the file and the
        # line; a traceback around it would bury it. Exit code 2: the
        # input is wrong and nothing was tried (console-scripts.rst).
        print(f"{prog or PROJECT}: {error}", file=sys.stderr)
        raise SystemExit(2)
    if setup_logging:
        log.setup(conf, PROJECT)
        log_limits.install()
    line = (f"{prog or conf.prog or PROJECT}: "
            f"{describe(conf, database_optional)}")
    if announce is None:
        LOG.info("%s", line)
    else:
        announce(line)
    return conf
