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

"""Importing a Cyborg deployment's database into cyborg_lite
(``cyborg-lite-manage cyborg import``).

- :mod:`.schema`: which Cyborg schema revision the source database is at
  (revisions it does not know are refused);
- :mod:`.reader`: reading the Cyborg database, never writing to it;
- :mod:`.plan`: what the import would do, every conflict settled;
- :mod:`.placement`: checking the plan against Placement (read only);
- :mod:`.importer`: applying the plan in one cyborg_lite transaction;
- :mod:`.adopt`: moving imported devices onto the inventory's own regions.
"""
