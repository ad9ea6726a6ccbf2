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

"""cyborg_lite_dra: a Kubernetes DRA kubelet plugin over cyborg_lite.

One process per node serves the kubelet's plugin registration and DRA node
services on unix sockets, publishes the node's cyborg_lite deployables as
ResourceSlices, and prepares ResourceClaims by binding accelerator requests
through cyborg_lite's v2 API (as Nova does) and writing CDI specs for the
container runtime.

Which module owns what: :mod:`.service` the gRPC services (registration,
DRA, health); :mod:`.claims` prepare and unprepare, :mod:`.claim_status`
what a prepared claim got, in its status; :mod:`.inventory` the node's
deployables (and their shares), :mod:`.slices` the ResourceSlices,
:mod:`.functions` what Placement says of a region, :mod:`.ledger` the
claims' allocations in Placement and what VMs hold; :mod:`.cyborg` and
:mod:`.kube` the two APIs; :mod:`.cdi`, :mod:`.devnodes`,
:mod:`.checkpoint`, :mod:`.fileio`; ``kubelet/`` the kubelet's protos.
"""
