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

"""Programming regions without races.

Where a region goes is decided in :mod:`cyborg_lite.scheduling`; this
package loads it.

- :mod:`regions`: the region state machine (``ready``, ``programming``,
  ``error``), every change a conditional UPDATE, with an owner lease;
- :mod:`programmer`: bind-time, admin and pool programming through the
  host agents, in the background of the API process;
- :mod:`providers`: ``reserved`` and the function trait of a region's
  resource provider;
- :mod:`pools`: function pools, kept programmed ahead of binds;
- :mod:`agent_watch`: which hosts' agents answer;
- :mod:`reconciler`: settles what a dead API process or agent left behind.
"""
