"""What one trial produced: the ordered events of the dialog and the model-call totals."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

EventKind = Literal[
    "user_message", "memory_update", "assistant_message", "tool_call", "tool_result"
]


@dataclass
class Event:
    seq: int
    turn: int
    step: int
    kind: EventKind
    content: str | None = None
    tool_name: str | None = None
    tool_call_id: str | None = None
    arguments: str | None = None
    """Tool arguments as the model sent them (a JSON string, maybe malformed)."""
    result: str | None = None
    intercepted: bool | None = None
    state_revision: int | None = None
    tool_error: str | None = None
    active_state_before: str | None = None
    active_state_after: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_input_tokens: int | None = None
    """Prompt tokens the provider served from its prompt cache, when it reports them."""
    latency_ms: float | None = None
    finish_reason: str | None = None
    """Why the model stopped (assistant messages and memory updates), as it reported."""

    def row(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Usage:
    """Totals over a trial's model calls; a total is null as soon as one call did not report."""

    model_calls: int = 0
    input_tokens: int | None = 0
    output_tokens: int | None = 0
    cost_usd: float | None = 0.0
    model_version: str | None = None
    system_fingerprint: str | None = None

    def add(self, input_tokens: int | None, output_tokens: int | None, cost: float | None,
            model_version: str | None, system_fingerprint: str | None = None) -> None:
        self.model_calls += 1
        self.input_tokens = _plus(self.input_tokens, input_tokens)
        self.output_tokens = _plus(self.output_tokens, output_tokens)
        self.cost_usd = None if self.cost_usd is None or cost is None else self.cost_usd + cost
        if model_version:
            self.model_version = model_version
        if system_fingerprint:
            self.system_fingerprint = system_fingerprint

    def reported(self) -> Usage:
        """Totals with 'no call at all' as null too."""
        if self.model_calls == 0:
            return Usage(0, None, None, None, self.model_version, self.system_fingerprint)
        return self


def _plus(total: int | None, value: int | None) -> int | None:
    return None if total is None or value is None else total + value


@dataclass
class Trace:
    events: list[Event] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    turns_played: int = 0

    def add(self, turn: int, step: int, kind: EventKind, **fields: Any) -> Event:
        event = Event(seq=len(self.events), turn=turn, step=step, kind=kind, **fields)
        self.events.append(event)
        return event

    def tool_calls(self) -> list[Event]:
        return [e for e in self.events if e.kind == "tool_call"]
