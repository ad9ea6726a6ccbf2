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

"""Accelerator drivers, loaded with stevedore from ``cyborg_lite.drivers``.

:mod:`.base` is the narrow interface each implements; :mod:`.intel_opae`
(Intel FPGAs through OPAE), :mod:`.xilinx_xrt` (Alveo cards through XRT),
:mod:`.nvidia_mdev` (vGPUs as mediated devices), :mod:`.pci` (whole PCI
functions, configured by :mod:`.pci_spec`) and :mod:`.sim` (simulated
devices) are the drivers; :mod:`._host` runs vendor tools and reads PCI
sysfs for the real ones.
"""

from stevedore import driver as stevedore_driver
from stevedore import exception as stevedore_exception
from stevedore import extension

from cyborg_lite.agent import exception

NAMESPACE = "cyborg_lite.drivers"


def available():
    """Names of the installed drivers."""
    return sorted(extension.ExtensionManager(NAMESPACE).names())


def load(conf, name):
    """Instantiate one driver by its entry-point name.

    :raises DriverNotFound: naming the installed drivers.
    """
    try:
        manager = stevedore_driver.DriverManager(
            NAMESPACE, name, invoke_on_load=True, invoke_args=(conf,))
    except stevedore_exception.NoMatches:
        raise exception.DriverNotFound(
            driver=name, available=", ".join(available()))
    return manager.driver


def load_enabled(conf):
    """The drivers named in ``[agent] enabled_drivers``, in that order.

    :returns: dict of name -> driver.
    """
    return {name: load(conf, name) for name in conf.agent.enabled_drivers}
