"""What one trial produced: the ordered events of the dialog and the model-call totals.

An event is one of six types, one per kind (a discriminated union on ``kind``), each with only
the fields its kind has. ``Event.row()`` flattens one into the ``events`` table's columns (the
others null) and ``event_from_row`` reads a stored row back, older schema versions included.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal, TypeVar

from warehouse.rows import shallow_dict
from warehouse.schema import EVENTS, EventKind

BLOCKED = "blocked: "
"""Prefix of the error text of a call the memory gate refused (the agent sees it). Schema v3
stores ``blocked`` as a column; for older rows it is read from this prefix."""
REJECTED = "rejected: "
"""Prefix of a memory update's stored ``tool_error`` when the update was refused."""


@dataclass(kw_only=True)
class _Base:
    seq: int = -1
    """Order within the trial, 0-based; ``Trace.add`` assigns it."""
    turn: int
    step: int = 0

    def row(self) -> dict[str, Any]:
        """The event as an ``events`` row (without the trial key): its kind's columns set,
        every other column null."""
        out = dict.fromkeys(EVENT_COLUMNS)
        out.update(shallow_dict(self))
        return out


@dataclass(kw_only=True)
class _ModelCall:
    """What a model call reported; each figure is null when the provider did not say."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_input_tokens: int | None = None
    """Prompt tokens the provider served from its prompt cache, when it reports them."""
    latency_ms: float | None = None
    finish_reason: str | None = None
    """Why the model stopped, as it reported."""


@dataclass(kw_only=True)
class UserMessage(_ModelCall, _Base):
    """A user turn; ``simulated``: a user simulator said it (its call's figures set)."""

    kind: Literal["user_message"] = "user_message"
    content: str | None = None
    simulated: bool = False
    active_state_before: str | None = None
    """The agent's memory before the turn (JSON or text; null in chat mode)."""
    active_state_after: str | None = None
    """The agent's memory once the turn's update was committed."""


@dataclass(kw_only=True)
class MemoryUpdate(_ModelCall, _Base):
    kind: Literal["memory_update"] = "memory_update"
    content: str | None = None
    """The committed memory, or the rejected output."""
    state_revision: int | None = None
    rejected: str | None = None
    """Why the update was refused (stored as ``tool_error`` = ``rejected: <why>``)."""

    def row(self) -> dict[str, Any]:
        out = super().row()
        del out["rejected"]
        out["tool_error"] = None if self.rejected is None else f"{REJECTED}{self.rejected}"
        return out


@dataclass(kw_only=True)
class AssistantMessage(_ModelCall, _Base):
    kind: Literal["assistant_message"] = "assistant_message"
    content: str | None = None


@dataclass(kw_only=True)
class ToolCall(_Base):
    kind: Literal["tool_call"] = "tool_call"
    tool_name: str
    tool_call_id: str | None = None
    arguments: str | None = None
    """Tool arguments as the model sent them (a JSON string, maybe malformed)."""
    intercepted: bool | None = None
    state_revision: int | None = None
    tool_error: str | None = None
    """Why the call was refused (by the memory gate or the sandbox); null when it ran."""
    blocked: bool = False
    """The memory gate refused it: it never reached the sandbox."""
    effects: int | None = None
    """A database domain's write: rows it changed, even when it then answered with an error
    (a fault after the commit); null for intercepted and read calls."""

    @property
    def refused(self) -> bool:
        """The call had no effect: the gate or the sandbox refused it (a write that changed
        rows had its effect, whatever it answered)."""
        return self.tool_error is not None and not self.effects


@dataclass(kw_only=True)
class ToolResult(_Base):
    kind: Literal["tool_result"] = "tool_result"
    tool_name: str
    tool_call_id: str | None = None
    result: str | None = None
    tool_error: str | None = None
    blocked: bool = False


@dataclass(kw_only=True)
class Nudge(_Base):
    """The harness asked the model once more after an empty reply (a route's agent
    adaptation, ``pipeline.models.routes.AgentAdaptation``): ``content`` is what it was told.
    The empty reply before it is an ``assistant_message`` with no content; it was not put back
    into the dialog's history."""

    kind: Literal["nudge"] = "nudge"
    content: str | None = None


Event = UserMessage | MemoryUpdate | AssistantMessage | ToolCall | ToolResult | Nudge
EVENT_TYPES: dict[EventKind, type[Event]] = {
    "user_message": UserMessage, "memory_update": MemoryUpdate,
    "assistant_message": AssistantMessage, "tool_call": ToolCall, "tool_result": ToolResult,
    "nudge": Nudge,
}
E = TypeVar("E", UserMessage, MemoryUpdate, AssistantMessage, ToolCall, ToolResult, Nudge)
_KEY_COLUMNS = ("schema_version", "run_id", "trial_id", "attempt_id")
EVENT_COLUMNS: tuple[str, ...] = tuple(c for c in EVENTS.column_names if c not in _KEY_COLUMNS)
"""The ``events`` columns an event fills (all but the table's key)."""


def event_from_row(row: Mapping[str, Any]) -> Event:
    """A stored ``events`` row as its typed event. Rows of schema v1/v2 have no ``blocked``
    column: a refused tool call was blocked when its error text starts with ``BLOCKED``."""
    kind: EventKind = row["kind"]
    cls = EVENT_TYPES[kind]
    values = {f.name: row[f.name] for f in fields(cls) if f.name in row}
    if kind == "memory_update":
        error = row.get("tool_error")
        values["rejected"] = None if error is None else str(error).removeprefix(REJECTED)
    elif kind in ("tool_call", "tool_result") and row.get("blocked") is None:
        values["blocked"] = str(row.get("tool_error") or "").startswith(BLOCKED)
    return cls(**values)


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
    """A trial's dialog as scoring sees it: the events, and the agent error that ended it
    early, if one did (its closed kind)."""

    events: list[Event] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    user_usage: Usage = field(default_factory=Usage)
    """The user simulator's calls, costed apart from the agent's."""
    turns_played: int = 0
    ended_by: str | None = None
    """The agent error kind (``pipeline.errors``) that ended the dialog; None when it ran to
    its end or stopped for a reason that is not the agent's."""
    snapshots: dict[str, dict[str, Any]] = field(default_factory=dict)
    """A database domain: phase (``before`` / ``after``) -> the trial's database then
    (pipeline.environment.database.snapshot)."""

    def add(self, event: E) -> E:
        """Append ``event`` as the next in order (its ``seq`` is set here)."""
        event.seq = len(self.events)
        self.events.append(event)
        return event

    def tool_calls(self) -> list[ToolCall]:
        return [e for e in self.events if isinstance(e, ToolCall)]


SUMMARY_SCAFFOLD = ("Previous summary:", "Dialog so far:", "New user message:",
                    "Write the updated summary")
"""The headings of the summary update request; a summary that copies them copied the request."""


DIALOG_LINE_PREFIXES = ("user:", "assistant:")
"""How the update request writes the dialog's lines (``_dialog_text``)."""
