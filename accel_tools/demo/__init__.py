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

"""``cyborg-lite-demo``: the product's story on embedded services.

- :mod:`.main`: the command line; :mod:`.story` the whole story (Ironic,
  Placement, cyborg_lite and a boot's bind), :mod:`.standalone` the
  standalone walk, :mod:`.kubernetes` the DRA walk;
- :mod:`.cyborg`: cyborg_lite in the demo's own process;
  :mod:`.identities` who its requests come from;
  :mod:`.example_inventory` the inventory both walks start from;
- :mod:`.output`: how the steps are printed.
"""
