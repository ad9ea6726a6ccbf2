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


"""``GET /healthcheck`` for load balancers and monitoring.

oslo.middleware's healthcheck middleware serves it, with the backends the
operator lists in ``[healthcheck] backends`` plus ``cyborg_lite``
(:class:`DatabaseHealthcheck`): 200 when the database answers and its
schema is current, 503 otherwise. Anyone may ask, without a token, and
gets the verdict and its reason. The detailed view (database, schema
revisions, the agent transport's broker, the last inventory sync and its
outcome, the agents that stopped answering, and oslo.middleware's own
details) is for callers the ``cyborg:healthcheck:detail`` policy allows
(administrators by default); with ``auth_strategy = keystone`` they send a
token, which keystonemiddleware validates first.

Agents are not the API's health: a dead compute host's agent is named in
the detailed view, and the verdict stays 200, so a load balancer does not
take every API server out because of one host (binds needing that agent
are refused at once meanwhile, see
:mod:`~cyborg_lite.programming.agent_watch`).
"""

import oslo_messaging
from oslo_middleware import healthcheck
from oslo_middleware.healthcheck import pluginbase

from cyborg_lite import context as context_mod
from cyborg_lite import exception
from cyborg_lite import policy
from cyborg_lite import service
from cyborg_lite.agent import transport as agent_transport
from cyborg_lite.db import agent_contacts as contact_db
from cyborg_lite.db import leases as lease_db
from cyborg_lite.inventory import lease as inventory_lease

PATHS = ("/healthcheck",)
BACKEND = "cyborg_lite"
DETAIL_RULE = "cyborg:healthcheck:detail"
#: the key of the middleware's conf dict that carries the app's services.
_SERVICES = "cyborg_lite_services"
_DETAILED = "cyborg_lite_detailed"


class DatabaseHealthcheck(pluginbase.HealthcheckBaseExtension):
    """Healthy when the database answers and its schema is current."""

    def __init__(self, oslo_conf, conf):
        super().__init__(oslo_conf, conf)
        self.services = conf[_SERVICES]
        self.detailed = conf.get(_DETAILED, False)
        self._transport = None

    def healthcheck(self, server_port):
        svc = self.services
        details = [f"database: {service.masked_database_url(svc.conf)}"]
        try:
            found = svc.schema.revision()
            problem = svc.schema.problem(found)
        except Exception as error:
            reason = f"database unreachable: {_first_line(error)}"
            return pluginbase.HealthcheckResult(
                False, reason, "\n".join(details + [reason]))
        details.append(f"schema revision: {found or 'none'} (this code "
                       f"needs {svc.schema.needed})")
        if self.detailed:
            details.append(f"agent transport: {self._transport_status()}")
            details.append(f"last inventory sync: {self._last_sync()}")
            details.append(f"agents not answering: {self._silent_agents()}")
        if problem is not None:
            return pluginbase.HealthcheckResult(False, problem,
                                                "\n".join(details))
        return pluginbase.HealthcheckResult(True, "OK", "\n".join(details))

    def _transport_status(self):
        conf = self.services.conf
        if agent_transport.is_in_process(conf):
            return "in-process (agents embedded in the API process)"
        try:
            if self._transport is None:
                self._transport = agent_transport.get_transport(conf)
            target = oslo_messaging.Target(
                topic=agent_transport.PROBE_TOPIC)
            client = oslo_messaging.get_rpc_client(self._transport, target)
            client.prepare(retry=0).cast({}, "probe")
        except Exception as error:
            return f"broker unreachable: {_first_line(error)}"
        return "broker reachable"

    def _silent_agents(self):
        try:
            silent = contact_db.silent(self.services.db)
        except Exception as error:
            return f"unknown ({_first_line(error)})"
        return "; ".join(
            f"{s.hostname} (since {s.since.isoformat()}Z: {s.error})"
            for s in silent) or "none"

    def _last_sync(self):
        try:
            last = lease_db.last_outcome(self.services.db,
                                         inventory_lease.LEASE_NAME)
        except Exception as error:
            return f"unknown ({_first_line(error)})"
        if last is None:
            return "none recorded"
        ended_at, outcome = last
        return f"ended {ended_at.isoformat()}Z, {outcome}"


def _first_line(error):
    text = str(getattr(error, "orig", None) or error)
    return text.splitlines()[0] if text else type(error).__name__


def _middleware_conf(conf, services, detailed):
    opts = conf.healthcheck
    settings = {
        "backends": [BACKEND] + [b for b in opts.backends if b != BACKEND],
        "detailed": detailed,
        "allowed_source_ranges": opts.allowed_source_ranges,
        "ignore_proxied_requests": opts.ignore_proxied_requests,
        _SERVICES: services, _DETAILED: detailed}
    if opts.disable_by_file_path:
        settings["disable_by_file_path"] = opts.disable_by_file_path
    return settings


def wrap(wsgi_app, conf, services):
    """``wsgi_app`` with ``/healthcheck`` served in front of it."""
    # NOTE(cyborg_lite): a request the middleware ignores (outside
    # allowed_source_ranges, or proxied) goes on to the app, which knows no
    # such route: 404.
    simple = healthcheck.Healthcheck(
        wsgi_app, _middleware_conf(conf, services, False))
    detailed = healthcheck.Healthcheck(
        wsgi_app, _middleware_conf(conf, services, True))

    def by_caller(environ, start_response):
        ctx = context_mod.from_environ(environ, conf)
        try:
            policy.authorize(services.enforcer, DETAIL_RULE, ctx)
        except exception.PolicyNotAuthorized:
            return simple(environ, start_response)
        return detailed(environ, start_response)

    answer = by_caller
    if conf.auth_strategy == "keystone":
        from keystonemiddleware import auth_token
        validated = auth_token.AuthProtocol(by_caller,
                                            {"oslo_config_config": conf})

        def answer(environ, start_response):
            # NOTE(cyborg_lite): no token, no detail: load balancers poll
            # without one and must not need Keystone to be up.
            if environ.get("HTTP_X_AUTH_TOKEN"):
                return validated(environ, start_response)
            return simple(environ, start_response)

    def dispatch(environ, start_response):
        if environ.get("PATH_INFO") in PATHS:
            return answer(environ, start_response)
        return wsgi_app(environ, start_response)

    return dispatch
