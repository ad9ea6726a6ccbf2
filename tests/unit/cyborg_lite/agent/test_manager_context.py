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

"""The agent serves each call with the ids of the request that made it."""

from oslo_context import context as oslo_context

from cyborg_lite.agent import manager


def test_a_call_runs_with_the_callers_request_ids_then_forgets_them(
        sim_conf):
    agent = manager.AgentManager(sim_conf)
    seen = []
    driver = agent._drivers["sim"]
    discover = driver.discover

    def watched():
        seen.append(oslo_context.get_current())
        return discover()

    driver.discover = watched
    agent.discover({"request_id": "req-local", "global_request_id":
                    "req-global"})

    assert (seen[0].request_id, seen[0].global_request_id) == (
        "req-local", "req-global")
    assert oslo_context.get_current() is None
