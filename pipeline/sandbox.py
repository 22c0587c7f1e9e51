"""Per-trial sandbox: the one gateway every tool call of the agent goes through.

Read tools run against the trial's own deep copy of the domain's seed state (with the
scenario's ``state_changes`` applied: a condition task's twin field). State-changing
(write) tools are intercepted: the call is recorded in the journal with its arguments and the
state revision, answered as the real system would on success, and nothing else happens.
A tool refusing a call (unknown tool, bad arguments) is data for the agent, not an exception.

Mock-tools mode (``tools="mock"``, ``--tools mock``) runs no tool code at all: every call, read
or write, is answered from the recorded results it is given (a regression case's
``context.tool_results``); a call with no recording is refused like a bad call, an
agent-visible tool error. No tool function is reachable in this mode, so nothing can have a
side effect.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from pipeline.catalog import Domain
from pipeline.catalog.case_models import RecordedResult
from pipeline.catalog.state_paths import set_path

ToolsMode = Literal["sandbox", "mock"]
TOOLS_MODES: tuple[ToolsMode, ...] = ("sandbox", "mock")
NO_RECORDING = "no recorded result for this call (mock tools)"


@dataclass(frozen=True)
class ToolOutcome:
    result: Any
    intercepted: bool
    state_revision: int
    error: str | None = None


@dataclass(frozen=True)
class JournalEntry:
    tool: str
    arguments: dict[str, Any]
    state_revision: int


def recorded_answer(recorded: Sequence[RecordedResult], name: str, arguments: dict[str, Any]
                    ) -> RecordedResult | None:
    """The first recording of tool ``name`` whose arguments match (null: any arguments)."""
    for item in recorded:
        if item.tool == name and (item.arguments is None or item.arguments == arguments):
            return item
    return None


class Sandbox:
    def __init__(self, domain: Domain, tools: ToolsMode = "sandbox",
                 recorded: Sequence[RecordedResult] = (),
                 state_changes: Mapping[str, Any] | None = None) -> None:
        self.domain = domain
        self.tools = tools
        self.recorded = tuple(recorded)
        self.state: dict[str, Any] = copy.deepcopy(dict(domain.seed_state))
        for field, value in (state_changes or {}).items():
            set_path(self.state, field, copy.deepcopy(value))
        self.revision = 1
        self.journal: list[JournalEntry] = []

    def call(self, name: str, raw_arguments: str) -> ToolOutcome:
        spec = self.domain.tool(name)
        if spec is None:
            return self._refuse(f"unknown tool {name!r}")
        try:
            arguments = json.loads(raw_arguments or "{}")
        except json.JSONDecodeError as exc:
            return self._refuse(f"arguments are not valid JSON: {exc.msg}")
        if not isinstance(arguments, dict):
            return self._refuse("arguments must be a JSON object")
        error = best_match(Draft202012Validator(spec.parameters).iter_errors(arguments))
        if error is not None:
            where = ".".join(str(p) for p in error.absolute_path) or "arguments"
            return self._refuse(f"{where}: {error.message}")
        if self.tools == "mock":
            return self._replay(name, arguments, spec.kind == "write")
        if spec.kind == "write":
            self.journal.append(JournalEntry(name, arguments, self.revision))
            return ToolOutcome(dict(spec.intercept_response or {}), True, self.revision)
        result = self.domain.read_tools[name](self.state, arguments)
        return ToolOutcome(result, False, self.revision)

    def _replay(self, name: str, arguments: dict[str, Any], write: bool) -> ToolOutcome:
        recording = recorded_answer(self.recorded, name, arguments)
        if recording is None:
            return self._refuse(f"{name}: {NO_RECORDING}")
        if write:
            self.journal.append(JournalEntry(name, arguments, self.revision))
        return ToolOutcome(copy.deepcopy(recording.result), write, self.revision)

    def _refuse(self, message: str) -> ToolOutcome:
        return ToolOutcome({"error": message}, False, self.revision, error=message)
