"""Golden scripts kept by the reference server, so that a request names its script by id.

A real provider gets the conversation and the tools, nothing else; a reference model also needs
the scenario's golden script. Carried in every request body it would add kilobytes a real
provider never sees (and that a client then serialises and logs). Instead a client registers a
script once (``POST /agentsweep/scripts``, the script as the JSON body; the answer is its id)
and each request names it: ``{"agentsweep_reference_script_id": "<id>"}`` in the body, a few
dozen bytes. The id is a digest of the script's canonical JSON, so registering is idempotent and
any client (LiteLLM's, Inspect's) can compute or ask for it. A script in the body itself
(``SCRIPT_KEY``) still works.

``ScriptRegistrar`` is the client side: the reference providers register each trial's script
with its server once per process, and send its id in place of the script.
"""

from __future__ import annotations

import hashlib
import json
import threading
import urllib.request
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from pipeline.reference.reference import SCRIPT_KEY, Script

SCRIPT_ID_KEY = "agentsweep_reference_script_id"
"""The request-body key naming a registered script."""
SCRIPTS_PATH = "/agentsweep/scripts"
"""Where a script is registered (``POST``, the script as body), on every wire."""
SCRIPTS_KEPT = 100_000
"""Scripts a server keeps; the least recently used go first."""
REGISTER_TIMEOUT_S = 10.0
UNKNOWN_SCRIPT = "unknown script id"
"""How the server's refusal of an id it does not hold begins (a server restarted since the
script was registered): a harness error, retried; the retry registers again."""


def script_id(script: Script) -> str:
    """The id of a script: a digest of its canonical JSON."""
    canonical = json.dumps(script, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:24]


class ScriptStore:
    """The server's registered scripts by id (thread-safe, bounded)."""

    def __init__(self, kept: int = SCRIPTS_KEPT) -> None:
        self._kept = kept
        self._scripts: OrderedDict[str, Script] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, script: Script) -> str:
        key = script_id(script)
        with self._lock:
            self._scripts[key] = script
            self._scripts.move_to_end(key)
            while len(self._scripts) > self._kept:
                self._scripts.popitem(last=False)
        return key

    def get(self, key: str) -> Script | None:
        with self._lock:
            script = self._scripts.get(key)
            if script is not None:
                self._scripts.move_to_end(key)
            return script

    def __len__(self) -> int:
        return len(self._scripts)


def scripts_url(api_base: str) -> str:
    """The registration URL of the server behind ``api_base`` (any wire's)."""
    parts = urlsplit(api_base)
    return f"{parts.scheme}://{parts.netloc}{SCRIPTS_PATH}"


def register(api_base: str, script: Script) -> str:
    """Register ``script`` with the server behind ``api_base``; its id. OSError (a
    URLError included) when the server cannot be reached or refuses it."""
    request = urllib.request.Request(
        scripts_url(api_base), data=json.dumps(script, ensure_ascii=False).encode("utf-8"),
        headers={"Content-Type": "application/json"}, method="POST")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback, no proxy
    with opener.open(request, timeout=REGISTER_TIMEOUT_S) as reply:
        answer = json.loads(reply.read())
    key = answer.get("id") if isinstance(answer, dict) else None
    if key != script_id(script):
        raise OSError(f"{scripts_url(api_base)} answered {answer!r}, not the script's id")
    return str(key)


class ScriptRegistrar:
    """Per process: which scripts each server already has; swaps a call's script for its id."""

    def __init__(self) -> None:
        self._known: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def lean(self, options: Mapping[str, Any]) -> dict[str, Any]:
        """``options`` with the ``extra_body`` script replaced by its id, once the server
        behind ``api_base`` has it; unchanged when it cannot be registered (no ``api_base``,
        the server unreachable or older: the call then carries the script, or fails as it
        would have)."""
        extra = options.get("extra_body")
        api_base = options.get("api_base")
        if not isinstance(extra, dict) or not isinstance(extra.get(SCRIPT_KEY), dict) \
                or not isinstance(api_base, str):
            return dict(options)
        script = extra[SCRIPT_KEY]
        key = script_id(script)
        with self._lock:  # threads of one worker start trials of the same scenario at once
            if (api_base, key) not in self._known:
                try:
                    register(api_base, script)
                except (OSError, ValueError):
                    return dict(options)
                self._known.add((api_base, key))
        body = {k: v for k, v in extra.items() if k != SCRIPT_KEY}
        return {**options, "extra_body": {**body, SCRIPT_ID_KEY: key}}

    def forget(self) -> None:
        """Register every script again before its next use (a server lost them)."""
        with self._lock:
            self._known.clear()
