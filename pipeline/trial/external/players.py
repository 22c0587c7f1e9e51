"""The two kinds of external agent, behind one face: ``respond(text) -> str`` within a time.

Each trial's agent runs in a thread of its own with an event loop, every call of it (making it,
each turn, closing it) in one task of that loop: ``respond`` may be sync or async, and what an
async agent opens in one turn (an MCP session, a connection pool: anyio's cancel scopes) it may
close in another. An HTTP agent is a service speaking the protocol of docs/agents.md; its
requests run the same way.

The turn's time limit is the **agent's own** time: the time its model calls spent behind the
gateway (``model_seconds``: a slow or busy provider, a queue at the local model) is not counted,
so infrastructure never times an agent out; the model's own limits (its call timeout, the
trial's deadline) govern that time. A turn past its limit is abandoned: the thread is a daemon
and never holds the worker.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any, Protocol

from pipeline.errors import AgentError, InfraError
from pipeline.trial.external.session import AgentSession
from pipeline.util.redact import redact

Action = Callable[[], Any]
ModelSeconds = Callable[[], float]
"""Seconds the trial's model calls have taken so far (calls in flight included)."""
SERVICE_TIMEOUT_S = 24 * 3600.0
"""An HTTP agent's socket time limit: the turn's limit (the agent's own time) governs."""


class Player(Protocol):
    def respond(self, text: str, turn: int) -> str:
        """The agent's reply to one user turn; AgentError or InfraError when there is none."""

    def close(self) -> None:
        """The trial is over (never raises)."""


def _reply_of(value: Any, turn: int) -> str:
    if not isinstance(value, str):
        raise AgentError("agent_reply", f"turn {turn}: the agent answered a "
                                        f"{type(value).__name__}, not text", turn)
    if not value.strip():
        raise AgentError("empty_response", f"turn {turn}: the agent's reply is empty", turn)
    return value


class AgentThread:
    """One trial's agent thread: actions run one after another in one task of its loop."""

    def __init__(self, name: str, timeout_s: float, model_seconds: ModelSeconds) -> None:
        self.timeout_s = timeout_s
        self.model_seconds = model_seconds
        self.stuck = False
        """An action ran out of time: the thread is still in it and is left behind."""
        self._loop = asyncio.new_event_loop()
        self._queue: asyncio.Queue[tuple[Action, concurrent.futures.Future[Any]] | None] = (
            asyncio.Queue())
        self._thread = threading.Thread(target=self._loop.run_until_complete,
                                        args=(self._drive(),), daemon=True, name=name)
        self._thread.start()

    def call(self, action: Action, turn: int, what: str) -> Any:
        """``action``'s value; AgentError when it raised or ran out of the agent's time."""
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        started, model_before = time.monotonic(), self.model_seconds()
        self._loop.call_soon_threadsafe(self._queue.put_nowait, (action, future))
        while True:
            used = time.monotonic() - started - (self.model_seconds() - model_before)
            try:
                return future.result(max(self.timeout_s - used, 0.0))
            except concurrent.futures.TimeoutError:
                used = time.monotonic() - started - (self.model_seconds() - model_before)
                if used < self.timeout_s:
                    continue  # the model's time does not count: the agent has some left
                self.stuck = True
                raise AgentError("agent_timeout", f"{what}: the agent did not answer within "
                                                  f"{self.timeout_s:g} s of its own time (its "
                                                  "model calls not counted)", turn) from None
            except (AgentError, InfraError):
                raise
            except Exception as exc:  # the agent's own code raised: the agent's failure
                raise AgentError("agent_exception", redact(
                    f"{what}: the agent raised {type(exc).__name__}: {exc}")[:2000],
                    turn) from exc

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._queue.put_nowait, None)
        if self.stuck:  # it still runs the action that timed out: nothing to wait for
            return
        self._thread.join(timeout=1.0)
        if not self._thread.is_alive():
            self._loop.close()

    async def _drive(self) -> None:
        """The agent's one task: each action in turn, its outcome to its caller's future."""
        while (item := await self._queue.get()) is not None:
            action, future = item
            try:
                value = action()
                future.set_result(await value if inspect.isawaitable(value) else value)
            except Exception as exc:
                future.set_exception(exc)
            except BaseException as exc:  # sys.exit() or a cancellation in the agent's code
                future.set_exception(RuntimeError(f"{type(exc).__name__}: {exc}"))


class PythonPlayer:
    """``factory(session)`` made in the agent's thread; each turn is one ``respond``."""

    def __init__(self, factory: Callable[[AgentSession], Any], session: AgentSession,
                 timeout_s: float, model_seconds: ModelSeconds) -> None:
        self.thread = AgentThread(f"agentsweep-agent-{session.trial_id[:8]}", timeout_s,
                                  model_seconds)
        self.agent = self.thread.call(lambda: factory(session), 0, "making the agent")
        if not callable(getattr(self.agent, "respond", None)):
            self.close()
            raise AgentError("agent_reply", f"the agent factory returned a "
                                            f"{type(self.agent).__name__}, which has no "
                                            "respond(user_message)")

    def respond(self, text: str, turn: int) -> str:
        return _reply_of(self.thread.call(lambda: self.agent.respond(text), turn,
                                          f"turn {turn}"), turn)

    def close(self) -> None:
        agent = getattr(self, "agent", None)
        closer = getattr(agent, "aclose", None) or getattr(agent, "close", None)
        if not self.thread.stuck and callable(closer):
            try:
                self.thread.call(closer, 0, "closing the agent")
            except (AgentError, InfraError):
                pass  # the trial's verdict is made; a failing close changes nothing
        self.thread.stop()


class HttpPlayer:
    """A service: ``POST /sessions``, ``POST /sessions/<id>/messages``, ``DELETE
    /sessions/<id>`` (docs/agents.md)."""

    def __init__(self, url: str, session: AgentSession, timeout_s: float,
                 model_seconds: ModelSeconds) -> None:
        self.url = url.rstrip("/")
        self.thread = AgentThread(f"agentsweep-agent-{session.trial_id[:8]}", timeout_s,
                                  model_seconds)
        answer = self._request("POST", "/sessions", session.as_json(), 0, "starting a session")
        session_id = answer.get("session_id")
        if not isinstance(session_id, str) or not session_id:
            self.thread.stop()
            raise AgentError("agent_reply", "the agent service answered POST /sessions "
                                            "without a session_id")
        self.session_id = session_id

    def respond(self, text: str, turn: int) -> str:
        answer = self._request("POST", f"/sessions/{self.session_id}/messages",
                               {"content": text}, turn, f"turn {turn}")
        return _reply_of(answer.get("content"), turn)

    def close(self) -> None:
        if not self.thread.stuck:
            try:
                self._request("DELETE", f"/sessions/{self.session_id}", None, 0,
                              "ending a session")
            except (AgentError, InfraError):
                pass
        self.thread.stop()

    def _request(self, method: str, path: str, payload: dict[str, Any] | None, turn: int,
                 what: str) -> dict[str, Any]:
        result: dict[str, Any] = self.thread.call(
            lambda: _exchange(self.url, method, path, payload, turn, what), turn, what)
        return result


def _exchange(url: str, method: str, path: str, payload: dict[str, Any] | None, turn: int,
              what: str) -> dict[str, Any]:
    """One request to an agent service, its failures classified."""
    data = json.dumps(payload).encode() if payload is not None else None
    request = urllib.request.Request(url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=SERVICE_TIMEOUT_S) as answer:  # noqa: S310
            body = answer.read()
    except urllib.error.HTTPError as exc:
        raise AgentError("agent_exception", redact(
            f"{what}: the agent service answered {exc.code}: "
            f"{exc.read()[:500].decode(errors='replace')}"), turn) from exc
    except (urllib.error.URLError, OSError) as exc:
        raise InfraError("connection", redact(f"{what}: the agent service at {url} cannot "
                                              f"be reached: {exc}")) from exc
    try:
        decoded = json.loads(body or b"{}")
    except json.JSONDecodeError as exc:
        raise AgentError("agent_reply", f"{what}: the agent service answered no JSON",
                         turn) from exc
    if not isinstance(decoded, dict):
        raise AgentError("agent_reply", f"{what}: the agent service answered no JSON object",
                         turn)
    return decoded
