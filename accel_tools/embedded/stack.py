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

"""The Ironic half of the story, started together under one directory.

:class:`IronicStack` starts the BMC emulator, a Placement and an Ironic
whose ``[placement]`` group points at that Placement (so its conductor
reports the nodes' accelerators), plus an HTTP server for firmware images,
each in its own subdirectory of ``state_dir``. Placement and Ironic start
at the same time. :meth:`IronicStack.log_tail` gives a component's log for
failure reports::

    with IronicStack(state_dir) as stack:
        baremetal = stack.ironic.connection().baremetal
        node = ironic.enroll(baremetal, stack.bmc, name="compute-1")
"""

import os

from accel_tools.embedded import bmc as bmc_mod
from accel_tools.embedded import common
from accel_tools.embedded import images
from accel_tools.embedded import ironic as ironic_mod
from accel_tools.embedded import placement as placement_mod

#: components, in start order.
COMPONENTS = ("bmc", "placement", "ironic", "images")


class IronicStack:
    """BMC emulator, Placement, Ironic and an image server.

    :param state_dir: an existing directory; each component gets a
        subdirectory named after it.
    :param bmc_devices: optional ``{system id: [device, ...]}`` for the
        emulator (default: its own default devices).
    :param ironic_options: extra ``{section: {option: value}}`` for Ironic.
    """

    def __init__(self, state_dir, bmc_devices=None, ironic_options=None):
        self.state_dir = state_dir
        self.bmc_devices = bmc_devices
        self.ironic_options = ironic_options
        self.bmc = self.placement = self.ironic = self.images = None
        self.timings = {}

    def _dir(self, name):
        path = os.path.join(self.state_dir, name)
        os.makedirs(path, exist_ok=True)
        return path

    def start(self):
        """Start every component and wait until each answers.

        :returns: self.
        :raises RuntimeError: naming the component that failed (its log is
            in the message); the components already started are stopped.
        """
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self):
        with common.Stopwatch(self.timings, "bmc"):
            self.bmc = bmc_mod.BmcEmulator(self._dir("bmc"),
                                           devices=self.bmc_devices).start()
        with common.Stopwatch(self.timings, "placement+ironic"):
            self.placement = placement_mod.PlacementServer(
                self._dir("placement"),
                db_file=os.path.join(self._dir("placement"),
                                     "placement.sqlite"),
                port=common.free_port()).spawn()
            self.ironic = ironic_mod.IronicServer(
                self._dir("ironic"), placement_url=self.placement.url,
                options=self.ironic_options)
            self.ironic.start()
            self.placement.wait_ready()
        self.images = images.ImageServer(self._dir("images"))

    def stop(self):
        """Stop whatever runs, in reverse start order."""
        for name in reversed(COMPONENTS):
            component = getattr(self, name)
            if component is not None:
                try:
                    component.stop()
                except Exception:  # noqa: S110 - best effort at teardown
                    pass

    def log_tail(self, name, lines=30):
        """The last lines of component ``name``'s log ('' if none)."""
        component = getattr(self, name, None)
        if component is None or not hasattr(component, "log_tail"):
            return ""
        return component.log_tail(lines=lines)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
