"""The agent's working memory, one class per memory mode (the changing-intent method, "three
variants").

- ``chat``: no memory beyond the history.
- ``summary``: after each user message a separate model call rewrites a short goal summary;
  the planner sees it with the history.
- ``structured``: after each user message a separate model call proposes the next state object;
  it is validated against the domain's state schema and invariants and committed with the next
  revision, and only then may the planner act (two-phase). State-changing calls are gated on the
  committed state: a call planned under an older revision, or one the state does not permit, is
  dropped and the planner is asked again.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from pipeline.catalog import Domain
from pipeline.errors import AgentError
from pipeline.models.client import ModelClient, ModelReply
from pipeline.trace import SUMMARY_SCAFFOLD

SUMMARY_PROMPT = """You update a running summary of a user's request. You are not the
assistant: never answer the user, never offer help. Write the summary in the language of the
user's messages, as at most three short sentences: what the user wants now, with every current
value (a corrected value replaces the old one; copy values as the user wrote them); and what
the user forbade or postponed ("do not book yet"), if anything. Answer with the summary only."""

STATE_PROMPT = """You maintain the structured state of the user's current task for the
assistant described below. Given the previous state and the user's new message, answer with
the complete next state as one JSON object valid against the JSON Schema below, and nothing
else. Carry over every value the user did not change; replace a value the user corrected and
record the replacement in "superseded" as {{"path", "old", "new"}}; copy values exactly as the
user or the tools wrote them (never translate them); set a permission to true only for an
action the user asked for now, and to false when the user withdrew or postponed it.

The assistant's instructions:
{context}

JSON Schema of the state:
{schema}"""

REPAIR_PROMPT = """That state was rejected: {reason}. Answer with the corrected complete state
as one JSON object, and nothing else."""

MemoryRecorder = Callable[[ModelReply, str | None], None]
"""Called with every memory model call's reply, and the reason it was rejected (None when the
update was accepted)."""


@dataclass(frozen=True)
class GateDecision:
    allowed: bool
    reason: str | None = None


class Memory(Protocol):
    mode: str
    revision: int

    def update(self, turn: int, user_text: str, messages: list[dict[str, Any]],
               model: ModelClient, record: MemoryRecorder) -> None:
        """Fold a new user message into memory (model calls, each passed to ``record``).
        Raises AgentError ``invalid_memory`` when no usable memory came back."""

    def snapshot(self) -> str | None:
        """The memory as text for the trace (JSON for a state), None when there is none."""

    def planner_note(self) -> str | None:
        """What the planner is told about the memory, appended to the system prompt."""

    def gate(self, tool: str, kind: str, planned_revision: int) -> GateDecision:
        """Whether a call planned at ``planned_revision`` may run now."""


class ChatMemory:
    mode = "chat"
    revision = 0

    def update(self, turn: int, user_text: str, messages: list[dict[str, Any]],
               model: ModelClient, record: MemoryRecorder) -> None:
        return None

    def snapshot(self) -> str | None:
        return None

    def planner_note(self) -> str | None:
        return None

    def gate(self, tool: str, kind: str, planned_revision: int) -> GateDecision:
        return GateDecision(True)


def _dialog_text(messages: list[dict[str, Any]]) -> str:
    lines = []
    for message in messages:
        if message["role"] in ("user", "assistant") and message.get("content"):
            lines.append(f"{message['role']}: {message['content']}")
    return "\n".join(lines)


def _truncated(reply: ModelReply) -> bool:
    return reply.finish_reason == "length"


@dataclass
class SummaryMemory:
    mode: str = "summary"
    revision: int = 0
    summary: str = ""

    def update(self, turn: int, user_text: str, messages: list[dict[str, Any]],
               model: ModelClient, record: MemoryRecorder) -> None:
        previous, dialog, new, ask = SUMMARY_SCAFFOLD
        parts = [f"{previous}\n{self.summary}" if self.summary else "",
                 f"{dialog}\n{_dialog_text(messages)}" if messages else "",
                 f"{new}\n{user_text}", f"{ask}."]
        request = [{"role": "system", "content": SUMMARY_PROMPT},
                   {"role": "user", "content": "\n\n".join(p for p in parts if p)}]
        reply = model.complete(request, None, purpose="summary", turn=turn)
        text = (reply.content or "").strip()
        reason = ("the summary update was empty" if not text else
                  "the summary update was cut off at the token limit" if _truncated(reply)
                  else None)
        if reason is not None:
            record(reply, reason)
            raise AgentError("invalid_memory", f"turn {turn}: {reason}", turn)
        self.summary = text
        self.revision += 1
        record(reply, None)

    def snapshot(self) -> str | None:
        return self.summary or None

    def planner_note(self) -> str | None:
        return f"Current task summary (authoritative):\n{self.summary}" if self.summary else None

    def gate(self, tool: str, kind: str, planned_revision: int) -> GateDecision:
        return GateDecision(True)


def generation_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The schema a model is asked to fill: every declared property required (a small model
    otherwise leaves out the values it should carry over); what it accepts is unchanged."""
    out = {key: generation_schema(value) if isinstance(value, Mapping) else value
           for key, value in schema.items() if key != "$schema"}
    if schema.get("type") == "object" and isinstance(schema.get("properties"), Mapping):
        out["required"] = list(schema["properties"])
    return out


@dataclass
class StructuredMemory:
    domain: Domain
    context: str = ""
    """The agent's system prompt: what the state is about (dates, conventions)."""
    repairs: int = 1
    """Rejected updates sent back to the model with the reason before the update fails."""
    mode: str = "structured"
    revision: int = 0
    state: dict[str, Any] | None = None
    _validator: Draft202012Validator = field(init=False)
    _wanted: dict[str, Any] = field(init=False)

    def __post_init__(self) -> None:
        if self.domain.state_schema is None:
            raise ValueError(f"domain {self.domain.name} has no state.schema.json: "
                             "structured memory mode is not available for it")
        self._validator = Draft202012Validator(dict(self.domain.state_schema))
        self._wanted = generation_schema(self.domain.state_schema)

    def update(self, turn: int, user_text: str, messages: list[dict[str, Any]],
               model: ModelClient, record: MemoryRecorder) -> None:
        schema = json.dumps(self.domain.state_schema, ensure_ascii=False)
        request = [
            {"role": "system", "content": STATE_PROMPT.format(schema=schema,
                                                              context=self.context)},
            {"role": "user", "content": json.dumps(
                {"previous_state": self.state, "dialog": _dialog_text(messages),
                 "new_message": user_text}, ensure_ascii=False)},
        ]
        for attempt in range(self.repairs + 1):
            reply = model.complete(request, None, purpose="state", turn=turn,
                                   response_schema=self._wanted)
            try:
                proposed = self._accept(turn, reply)
            except AgentError as rejected:
                record(reply, str(rejected))
                if attempt == self.repairs:
                    raise
                request = [*request, {"role": "assistant", "content": reply.content or ""},
                           {"role": "user", "content": REPAIR_PROMPT.format(
                               reason=str(rejected).split(": ", 1)[-1])}]
                continue
            self.state, self.revision = proposed, self.revision + 1  # commit
            record(reply, None)
            return

    def _accept(self, turn: int, reply: ModelReply) -> dict[str, Any]:
        if _truncated(reply):
            raise AgentError("invalid_memory", f"turn {turn}: the state update was cut off "
                             "at the token limit", turn)
        proposed = self._parse(turn, reply.content)
        proposed["revision"] = self.revision + 1  # the revision is ours to assign
        self._validate(turn, proposed)
        return proposed
    @staticmethod
    def _parse(turn: int, content: str | None) -> dict[str, Any]:
        text = (content or "").strip()
        if text.startswith("```"):
            text = text.strip("`").removeprefix("json").strip()
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise AgentError("invalid_memory", f"turn {turn}: state is not JSON: {exc.msg}",
                             turn) from None
        if not isinstance(value, dict):
            raise AgentError("invalid_memory", f"turn {turn}: state is not a JSON object",
                             turn)
        return value

    def _validate(self, turn: int, state: dict[str, Any]) -> None:
        error = best_match(self._validator.iter_errors(state))
        if error is not None:
            where = ".".join(str(p) for p in error.absolute_path) or "state"
            raise AgentError("invalid_memory", f"turn {turn}: {where}: {error.message}", turn)
        broken = self.domain.state_invariants(state) if self.domain.state_invariants else []
        if broken:
            raise AgentError("invalid_memory", f"turn {turn}: invariant: {broken[0]}", turn)

    def snapshot(self) -> str | None:
        return None if self.state is None else json.dumps(self.state, ensure_ascii=False,
                                                          sort_keys=True)

    def planner_note(self) -> str | None:
        if self.state is None:
            return None
        return ("Active task state (authoritative; act only within its permissions):\n"
                + json.dumps(self.state, ensure_ascii=False, sort_keys=True))

    def gate(self, tool: str, kind: str, planned_revision: int) -> GateDecision:
        if planned_revision != self.revision:
            return GateDecision(False, f"stale: planned at state revision {planned_revision}, "
                                       f"current is {self.revision}; re-plan")
        permissions = (self.state or {}).get("permissions", {})
        allowed = permissions.get(tool, kind == "read")
        if allowed is not True:
            return GateDecision(False, f"not permitted by the active state (revision "
                                       f"{self.revision}): permissions.{tool} is {allowed}")
        return GateDecision(True)


def memory_for(mode: str, domain: Domain, context: str = "") -> Memory:
    """The memory of ``mode``; ``context`` (the agent's system prompt: dates, conventions) is
    given to the structured-state update, which must produce exact values."""
    if mode == "chat":
        return ChatMemory()
    if mode == "summary":
        return SummaryMemory()
    if mode == "structured":
        return StructuredMemory(domain, context)
    raise ValueError(f"unknown memory mode {mode!r}")
