"""The journal: what the agent did and said in a trial, read once from its events.

What the agent did comes from the tool-call events, never from its words: ``calls`` are the
calls that took effect (the memory gate and the sandbox refused none of them), ``attempted``
every call, refused ones included. ``replies`` are the last non-empty assistant message of each
turn. Every check reads these facts from here, so each is computed once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, NamedTuple

from pipeline.trace import AssistantMessage, Event, MemoryUpdate, ToolCall, UserMessage


@dataclass(frozen=True)
class Call:
    turn: int
    step: int
    name: str
    arguments: dict[str, Any] | None
    """Parsed arguments; None when the model sent something that is not a JSON object."""
    refused: bool = False
    """The memory gate or the sandbox refused it: it had no effect."""
    blocked: bool = False
    """The memory gate refused it (a kind of refusal)."""
    effects: int | None = None
    """A database domain's write: rows it changed (pipeline.environment.sandbox)."""
    error: str | None = None
    """What the call answered as an error (a refusal, or a fault after the commit)."""


class Reply(NamedTuple):
    """The final agent reply of a turn."""

    turn: int
    step: int
    text: str


def parse_arguments(arguments: str | None) -> dict[str, Any] | None:
    try:
        parsed = json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return None
    return parsed if isinstance(parsed, dict) else None


@dataclass(frozen=True)
class Journal:
    events: tuple[Event, ...]
    attempted: tuple[Call, ...]
    """Every tool call in order, refused ones included (attempts, for diagnostics)."""
    replies: Mapping[int, Reply]
    """Turn -> its last non-empty assistant message."""
    memory_after: Mapping[int, str | None]
    """Turn -> the agent's memory once the turn's update was committed."""
    memory_updates: Mapping[int, MemoryUpdate]
    """Turn -> its last memory update (a refused one was retried until this one)."""
    last_turn: int
    """The last turn the dialog reached (0 when empty)."""

    @classmethod
    def of(cls, events: Sequence[Event]) -> Journal:
        replies: dict[int, Reply] = {}
        updates: dict[int, MemoryUpdate] = {}
        for event in events:
            if isinstance(event, AssistantMessage) and (event.content or "").strip():
                replies[event.turn] = Reply(event.turn, event.step, event.content or "")
            elif isinstance(event, MemoryUpdate):
                updates[event.turn] = event
        return cls(
            events=tuple(events),
            attempted=tuple(Call(e.turn, e.step, e.tool_name, parse_arguments(e.arguments),
                                 e.refused, e.blocked, e.effects, e.tool_error)
                            for e in events if isinstance(e, ToolCall)),
            replies=replies,
            memory_after={e.turn: e.active_state_after for e in events
                          if isinstance(e, UserMessage)},
            memory_updates=updates,
            last_turn=max((e.turn for e in events), default=0),
        )

    @cached_property
    def calls(self) -> tuple[Call, ...]:
        """The calls that took effect, in order: what the agent did."""
        return tuple(c for c in self.attempted if not c.refused)

    def final_replies(self) -> list[Reply]:
        return [self.replies[turn] for turn in sorted(self.replies)]

    def model_steps(self, from_turn: int = 1) -> list[tuple[int, int]]:
        """(turn, step) of every planner step from ``from_turn`` on, in order."""
        return sorted({(e.turn, e.step) for e in self.events
                       if isinstance(e, AssistantMessage) and e.turn >= from_turn})

    def reply_step(self, turn: int) -> int | None:
        """The step of the last assistant message of ``turn`` (empty ones included)."""
        return max((e.step for e in self.events
                    if isinstance(e, AssistantMessage) and e.turn == turn), default=None)

    def questions(self) -> int:
        """Assistant messages that ask the user something."""
        return sum(1 for e in self.events
                   if isinstance(e, AssistantMessage) and "?" in (e.content or ""))
