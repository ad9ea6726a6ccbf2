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

"""cyborg_lite_dra's options, one module per group: :mod:`.dra` (the
plugin and its sockets), :mod:`.cyborg` (the cyborg_lite API it calls) and
:mod:`.placement`; each has register_opts(conf) and list_opts()."""

from oslo_config import cfg

from cyborg_lite_dra.conf import cyborg
from cyborg_lite_dra.conf import dra
from cyborg_lite_dra.conf import placement

_MODULES = [dra, cyborg, placement]


def register_opts(conf):
    """Register every group on ``conf``."""
    for module in _MODULES:
        module.register_opts(conf)


def new_conf():
    """A fresh ConfigOpts with every option registered."""
    conf = cfg.ConfigOpts()
    register_opts(conf)
    return conf


def list_opts():
    """(group, options) pairs for oslo-config-generator."""
    pairs = []
    for module in _MODULES:
        pairs.extend(module.list_opts())
    return pairs
