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

"""How the demo prints its steps, for a person to read.

:class:`Walk` numbers and times the story's steps and, when one fails,
prints the tail of the failing component's log; :class:`Api` prints one
line per request to cyborg_lite; :class:`StandaloneWalk` prints each
request and response of the standalone walk in full. The helpers below
shape what they print.
"""

import contextlib
import json
import time

import requests


class DemoFailed(Exception):
    """A step did not end as expected; the message says what happened."""


class Walk:
    """Numbered steps with timings, printed for a person to read.

    :param out: where to print.
    :param logs: ``{component: callable returning its log tail}``, printed
        when a step involving that component fails.
    """

    def __init__(self, out, logs=None):
        self.out = out
        self.logs = logs if logs is not None else {}
        self.step_no = 0
        self.timings = []
        self.began = time.monotonic()

    def say(self, text=""):
        """Print one line (or several)."""
        print(text, file=self.out, flush=True)

    def detail(self, text):
        """Print an indented line under the current step."""
        for line in str(text).splitlines() or [""]:
            self.say("      " + line)

    @contextlib.contextmanager
    def step(self, title, components=()):
        """One numbered step; on failure prints the components' logs and
        raises :class:`DemoFailed`."""
        self.step_no += 1
        number = self.step_no
        self.say()
        self.say(f"== {number}. {title}")
        began = time.monotonic()
        try:
            yield
        except Exception as exc:
            seconds = time.monotonic() - began
            self.timings.append((number, title, seconds, False))
            message = shorten(str(exc) or type(exc).__name__)
            self.say(f"   !! step {number} failed after {seconds:.1f} s: "
                     f"{message}")
            for name in components:
                tail = self._log_tail(name)
                if tail:
                    self.say(f"   ---- last lines of the {name} log ----")
                    self.detail(tail.rstrip())
            raise DemoFailed(f"step {number} ({title}) failed: "
                             f"{message}") from exc
        seconds = time.monotonic() - began
        self.timings.append((number, title, seconds, True))
        self.say(f"   ({seconds:.1f} s)")

    def _log_tail(self, name):
        try:
            lines = self.logs[name]().splitlines()[-15:]
            return "\n".join(shorten(line, 240) for line in lines)
        except Exception:
            return ""

    def summary(self, facts):
        """The closing table of steps and timings, then ``facts``."""
        self.say()
        self.say("== Summary")
        for number, title, seconds, ok in self.timings:
            mark = "ok  " if ok else "FAIL"
            self.say(f"   {mark} {number:>2}. {title:<66.66} "
                     f"{seconds:6.1f} s")
        total = time.monotonic() - self.began
        self.say(f"   total {total:.1f} s")
        for fact in facts:
            self.say(f"   - {fact}")


class Api:
    """HTTP calls to cyborg_lite, one line per request and response."""

    def __init__(self, base_url, walk, verbose=False):
        self.base_url = base_url
        self.walk = walk
        self.verbose = verbose

    def call(self, method, path, headers, body=None, expect=None,
             show=False):
        """One request; returns ``(status, JSON or None)``.

        :param expect: the status wanted; another one fails the step.
        :param show: print the (trimmed) response body.
        """
        who = ("Nova, user + service token" if "X-Service-Roles" in headers
               else "admin" if headers else "anyone")
        response = requests.request(method, self.base_url + path,
                                    headers=headers, json=body, timeout=60)
        self.walk.detail(f"--> {method} {path}  [{who}]  <-- "
                         f"{response.status_code} {response.reason}")
        data = None
        if response.content:
            try:
                data = response.json()
            except ValueError:
                data = response.text
        if (show or self.verbose) and data:
            self.walk.detail(indent(json.dumps(trim(data), indent=2)))
        if expect is not None and response.status_code != expect:
            raise DemoFailed(f"{method} {path}: expected {expect}, got "
                             f"{response.status_code}: {data}")
        return response.status_code, data


class StandaloneWalk:
    """Standalone mode: sends requests and prints both directions."""

    def __init__(self, base_url, out):
        self.base_url = base_url
        self.out = out
        self.step = 0

    def say(self, text=""):
        print(text, file=self.out)

    def title(self, text):
        self.step += 1
        self.say()
        self.say(f"== {self.step}. {text}")

    def call(self, method, path, headers, body=None, expect=None):
        """One request; prints both directions; returns the JSON or None."""
        who = ("Nova (user + service token)" if "X-Service-Roles" in headers
               else "admin" if headers else "anyone")
        self.say(f"--> {method} {path}    [as {who}]")
        if body is not None:
            self.say(indent6(json.dumps(body, indent=2)))
        response = requests.request(method, self.base_url + path,
                                    headers=headers, json=body, timeout=30)
        self.say(f"<-- {response.status_code} {response.reason}")
        data = None
        if response.content:
            data = response.json()
            self.say(indent6(json.dumps(trim(data), indent=2)))
        if expect is not None and response.status_code != expect:
            raise SystemExit(f"demo failed: expected {expect}, got "
                             f"{response.status_code}")
        return data


def shorten(text, limit=400):
    """``text`` on one line, cut to ``limit`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def indent(text):
    """``text`` indented by four spaces."""
    return "\n".join("    " + line for line in text.splitlines())


def indent6(text):
    """``text`` indented by six spaces."""
    return "\n".join("      " + line for line in text.splitlines())


def trim(data):
    """Drop the noisiest fields (links, timestamps) for reading."""
    if isinstance(data, list):
        return [trim(item) for item in data]
    if isinstance(data, dict):
        return {k: trim(v) for k, v in data.items()
                if k not in ("links", "created_at", "updated_at")}
    return data


def bdf(info):
    """The PCI address (domain:bus:device.function) of an attach handle."""
    return "{}:{}:{}.{}".format(info["domain"], info["bus"], info["device"],
                                info["function"])
