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

"""Where a boot's accelerator goes: cyborg_lite's part in Nova's scheduling.

- :mod:`locks`: the lock traits that keep a region to the content it runs,
  and the request groups that honour them;
- :mod:`routing`: lookup routing, which answers Nova's read of a profile
  with the region it should take and keeps that region for it;
- :mod:`siblings`: moving an instance's allocation to another region of
  the same host when the one Nova chose cannot serve the bind.
"""
