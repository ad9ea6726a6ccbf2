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

"""The cyborg_lite host agent: the host work the API asks for.

- :mod:`.service`: the agent's RPC server, as its own process or embedded;
- :mod:`.manager`: its RPC endpoint, which does the work through the drivers;
- :mod:`.rpcapi`: the client the API calls it with; :mod:`.transport` the
  oslo.messaging transports of both;
- :mod:`.drivers`: one driver per family of devices;
- :mod:`.privsep`: the few operations that run privileged;
- :mod:`.images`: finding and fetching the image that programs a region;
- :mod:`.handles`: matching what the agent discovers in-band to the
  inventory document;
- :mod:`.exception`: errors raised on the agent and re-raised on the caller.
"""
