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

"""Keep binds off the agents that stopped answering.

A call to a dead agent costs the caller its whole timeout; a bind that
waits that long holds an API worker, and a few of them hold every worker,
so the API stops answering anything (``/healthcheck`` included) because of
one compute host. What the API processes heard from each agent is kept in
the database (:mod:`cyborg_lite.db.agent_contacts`), so every worker knows
which ones are silent:

- a call to a silent agent is refused at once with
  :class:`AgentNotAnswering` (a bind is then answered 409 at once);
- while a call to an agent has waited ``[programming]
  agent_waiting_limit`` seconds, further calls to it are refused at once
  instead of waiting too;
- a background probe asks each silent agent again every ``[programming]
  agent_probe_interval`` seconds (one probe per interval across all API
  processes); its first answer makes the agent usable again.
"""

import threading

from oslo_log import log as logging

from cyborg_lite.agent import exception as agent_exception
from cyborg_lite.db import agent_contacts as contact_db
from cyborg_lite.metrics import process as metrics

LOG = logging.getLogger(__name__)

#: errors that mean the agent did not answer (any other error is an answer).
UNANSWERED = (agent_exception.AgentTimeout, agent_exception.AgentUnreachable)


class AgentNotAnswering(agent_exception.AgentError):
    msg_fmt = ("the agent of host %(host)s %(why)s; calls to it are not "
               "sent until it answers again (it is asked every "
               "%(interval)s s)")
    code = "agent.not_answering"


def _one_line(error):
    text = getattr(error, "message", None) or str(error)
    return (text.splitlines() or [type(error).__name__])[0]


class AgentWatch:
    """Decides whether a host's agent is worth calling, records the
    outcome of each call, and probes the silent ones in the background.

    :param conf: the API's ConfigOpts.
    :param db: the :class:`~cyborg_lite.db.engine.Database`.
    :param agent_api: a callable returning the
        :class:`~cyborg_lite.agent.rpcapi.AgentAPI`.
    :param agent_host: a callable mapping a host to the agent serving it.
    """

    def __init__(self, conf, db, agent_api, agent_host=lambda host: host):
        self.conf = conf
        self.db = db
        self._agent_api = agent_api
        self._agent_host = agent_host
        self._lock = threading.Lock()
        self._prober = None
        self._stopped = threading.Event()

    @property
    def interval(self):
        return self.conf.programming.agent_probe_interval

    def call(self, host, send):
        """Call ``send()`` (one RPC to ``host``'s agent) unless that agent
        is silent, and record whether it answered.

        :raises AgentNotAnswering: at once, for a silent agent.
        :returns: what ``send`` returned; its errors propagate.
        """
        self.before(host)
        try:
            result = send()
        except Exception as error:
            self.after(host, error)
            raise
        self.after(host, None)
        return result

    def before(self, host):
        """:raises AgentNotAnswering: when ``host``'s agent is silent, or
        another call to it has waited too long."""
        opts = self.conf.programming
        try:
            silent = contact_db.begin_call(
                self.db, host, opts.agent_waiting_limit,
                stale_after=opts.image_check_timeout
                + self.conf.agent.rpc_timeout)
        except Exception as error:
            # NOTE(programming): the record only saves time; without the
            # database the call itself decides.
            LOG.warning("Agent contacts of %s not read: %s", host,
                        _one_line(error))
            return
        if silent is None:
            return
        self.ensure_prober()
        if silent.error is None:
            why = (f"has not answered a call sent at "
                   f"{silent.since.isoformat()}Z")
        else:
            why = (f"has not answered since {silent.since.isoformat()}Z "
                   f"({silent.error})")
        raise AgentNotAnswering(host=host, why=why, interval=self.interval)

    def after(self, host, error):
        """Record the outcome of a call to ``host``'s agent: ``error`` None
        or an agent's own error is an answer; other errors say nothing
        about the agent."""
        answered = error is None or (
            isinstance(error, agent_exception.AgentError)
            and not isinstance(error, UNANSWERED + (AgentNotAnswering,)))
        try:
            if isinstance(error, UNANSWERED):
                metrics.agent_unanswered(host)
                contact_db.unanswered(self.db, host, _one_line(error))
                LOG.warning("The agent of %s stopped answering (%s): calls "
                            "to it are refused until it answers a probe",
                            host, _one_line(error))
                self.ensure_prober()
            elif answered:
                contact_db.answered(self.db, host)
        except Exception as db_error:
            LOG.warning("Agent contact of %s not recorded: %s", host,
                        _one_line(db_error))

    def ensure_prober(self):
        """Start this process's prober thread unless it runs."""
        with self._lock:
            if self._prober is not None and self._prober.is_alive():
                return
            self._stopped.clear()
            self._prober = threading.Thread(
                target=self._probe_loop, name="agent-prober", daemon=True)
            self._prober.start()

    def _probe_loop(self):
        # NOTE(programming): the thread ends once no agent is silent; the
        # next unanswered call starts it again.
        while not self._stopped.is_set():
            try:
                hosts = [s.hostname for s in contact_db.silent(self.db)]
            except Exception as error:
                LOG.warning("Silent agents not read: %s", _one_line(error))
                hosts = [None]
            if not hosts:
                return
            for host in hosts:
                if host is not None:
                    self.probe(host)
            self._stopped.wait(min(1.0, self.interval))

    def probe(self, host):
        """Ask silent ``host``'s agent again when its probe is due (in any
        process); True when it answered."""
        try:
            if not contact_db.claim_probe(self.db, host, self.interval):
                return False
        except Exception as error:
            LOG.warning("Probe of %s not claimed: %s", host,
                        _one_line(error))
            return False
        try:
            # NOTE(programming): find_image without a target is refused by
            # the agent at once, before any image source is read: an answer.
            self._agent_api().find_image(
                self._agent_host(host),
                timeout=max(1, min(self.interval,
                                   self.conf.agent.rpc_timeout)))
        except UNANSWERED as error:
            try:
                contact_db.unanswered(self.db, host, _one_line(error))
            except Exception as db_error:
                LOG.warning("Agent contact of %s not recorded: %s", host,
                            _one_line(db_error))
            return False
        except Exception as error:
            LOG.debug("The agent of %s answered its probe: %s", host,
                      _one_line(error))
        try:
            contact_db.answered(self.db, host)
        except Exception as error:
            LOG.warning("Agent contact of %s not recorded: %s", host,
                        _one_line(error))
            return False
        LOG.info("The agent of %s answers again: calls to it are sent",
                 host)
        return True

    def stop(self):
        """Stop the prober thread (it is a daemon: this only hastens it)."""
        self._stopped.set()
