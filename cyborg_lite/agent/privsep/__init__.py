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

"""What the host agent does with privilege, behind oslo.privsep.

As in Nova (``nova/privsep``) and Cyborg (``cyborg/privsep``), the agent
runs as its own unprivileged user and only the functions of this package
run privileged, in a privsep daemon that keeps just the capabilities they
need:

* :mod:`.mdev`: create and remove a mediated device (sysfs writes);
* :mod:`.fpga`: ``fpgaconf`` and ``xbmgmt program|reset`` on one
  device.

Every argument is checked twice, by :mod:`.checks`: on the agent's side
before it crosses, and again in the daemon, which trusts nothing the agent
sends (a PCI address is a PCI address, an mdev type is one its parent
lists, an image lies under the agent's image directories, a tool is the
named tool and owned by the daemon's user or root).

The daemon is started with ``sudo`` and oslo.rootwrap the way Nova
documents (see doc/source/admin/security.rst), configured in the
``[cyborg_lite_agent_privileged]`` section oslo.privsep reads
(``helper_command``, ``user``, ``group``, ``capabilities``).

Callers run :func:`start` before a privileged call, so that a daemon that
cannot start (no ``sudo``, a ``helper_command`` naming a missing binary,
sudo refusing) is reported as such, not as the error of the file or tool
the call was about.
"""

import shlex
import threading

from oslo_config import cfg
from oslo_privsep import capabilities
from oslo_privsep import daemon
from oslo_privsep import priv_context

from cyborg_lite.agent import exception

#: The configuration section oslo.privsep reads for this context.
CFG_SECTION = "cyborg_lite_agent_privileged"

#: CAP_DAC_OVERRIDE: write root-owned sysfs attributes (mdev create and
#: remove) and open the FPGA device nodes the tools use; CAP_SYS_ADMIN:
#: partial reconfiguration and the PCI hot reset of ``xbmgmt reset``.
CAPABILITIES = [capabilities.CAP_DAC_OVERRIDE, capabilities.CAP_SYS_ADMIN]

_starting = threading.Lock()

sys_admin_pctxt = priv_context.PrivContext(
    "cyborg_lite",
    cfg_section=CFG_SECTION,
    pypath=__name__ + ".sys_admin_pctxt",
    capabilities=CAPABILITIES,
)


def setup(conf):
    """Let oslo.privsep read the agent's configuration files.

    oslo.privsep reads its options (``[cyborg_lite_agent_privileged]``)
    from the global ``cfg.CONF``, and passes its configuration files to
    ``privsep-helper``; the agent parses its own ConfigOpts, whose files
    are handed on here. Call once, after ``conf`` is parsed and before
    any privileged call.
    """
    args = []
    for path in conf.config_file or []:
        args += ["--config-file", path]
    for path in conf.config_dir or []:
        args += ["--config-dir", path]
    cfg.CONF(args, project="cyborg_lite", default_config_files=[],
             default_config_dirs=[])


def _command(context):
    # NOTE(agent): oslo.privsep appends the context and a new socket path
    # at each start; without them it is what the operator configured (or
    # the default ``sudo privsep-helper --config-file ...``).
    return shlex.join(context.helper_command("SOCKET")[:-4])


def start(context=sys_admin_pctxt):
    """Start the privsep daemon unless it runs already.

    oslo.privsep starts it on the first call on its own; starting it here
    first keeps its failure apart from the call's: a missing ``sudo`` and
    a missing sysfs file are both ``FileNotFoundError`` otherwise.

    :raises HelperNotStarted: naming the helper command and its error.
    """
    if not context.client_mode:
        return
    with _starting:
        _start(context)


def _start(context):
    channel = context.channel
    if channel is not None and channel.running:
        return
    if channel is not None:
        # NOTE(agent): a daemon that died; oslo.privsep would restart it
        # at the next call, this does it where its failure is told apart.
        context.stop()
    try:
        context.start()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        if exc.filename:
            reason = f"{exc.filename}: {reason}"
        raise exception.HelperNotStarted(command=_command(context),
                                         reason=reason)
    except daemon.FailedToDropPrivileges as exc:
        raise exception.HelperNotStarted(
            command=_command(context),
            reason=f"{exc} (its standard error is in the agent's log, "
                   f"lines 'privsep log: ...')")
