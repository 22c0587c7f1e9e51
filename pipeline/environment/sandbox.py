"""Per-trial sandbox: the one gateway every tool call of the agent goes through.

Read tools run against the trial's own deep copy of the domain's seed state (with the
scenario's ``state_changes`` applied: a condition task's twin field). State-changing
(write) tools are intercepted: the call is recorded in the journal with its arguments and the
state revision, answered as the real system would on success, and nothing else happens.
A tool refusing a call (unknown tool, bad arguments) is data for the agent, not an exception.

A database domain (``tools.json``: ``"sandbox": "database"``) is the second style: its tools run
against the trial's own copy of the domain's SQLite database (pipeline.environment.database),
writes for
real; each call's ``effects`` is the number of rows whose content it changed (an idempotent
repeat, or writing a value that is already there, changes none), and a scenario's fault
(``timeout_after_commit``) lets the write commit and then answers the agent as if it had failed.

Mock-tools mode (``tools="mock"``, ``--tools mock``) runs no tool code at all: every call, read
or write, is answered from the recorded results it is given (a regression case's
``context.tool_results``); a call with no recording is refused like a bad call, an
agent-visible tool error. No tool function is reachable in this mode, so nothing can have a
side effect.
"""

from __future__ import annotations

import copy
import json
import sqlite3
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from pipeline.catalog import Domain
from pipeline.catalog.case_models import RecordedResult
from pipeline.catalog.database_models import TIMEOUT_MESSAGE, DatabaseRules
from pipeline.catalog.state_paths import set_path
from pipeline.environment.database import Snapshot, changed_rows, content, fresh_database, snapshot

ToolsMode = Literal["sandbox", "mock"]
TOOLS_MODES: tuple[ToolsMode, ...] = ("sandbox", "mock")
NO_RECORDING = "no recorded result for this call (mock tools)"


@dataclass(frozen=True)
class ToolOutcome:
    result: Any
    intercepted: bool
    state_revision: int
    error: str | None = None
    effects: int | None = None
    """A database domain's write: rows it changed (null for intercepted or read calls)."""


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
                 state_changes: Mapping[str, Any] | None = None,
                 database: DatabaseRules | None = None) -> None:
        self.domain = domain
        self.tools = tools
        self.recorded = tuple(recorded)
        self.state: dict[str, Any] = copy.deepcopy(dict(domain.seed_state))
        for field, value in (state_changes or {}).items():
            set_path(self.state, field, copy.deepcopy(value))
        self.db: sqlite3.Connection | None = (
            fresh_database(domain, database.setup if database is not None else ())
            if domain.sandbox == "database" and tools == "sandbox" else None)
        self.faults = tuple(database.faults) if database is not None else ()
        self.write_counts: Counter[str] = Counter()
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
        if self.db is not None:
            return self._on_database(self.db, name, arguments, spec.kind == "write")
        if spec.kind == "write":
            self.journal.append(JournalEntry(name, arguments, self.revision))
            return ToolOutcome(dict(spec.intercept_response or {}), True, self.revision)
        result = self.domain.read_tools[name](self.state, arguments)
        return ToolOutcome(result, False, self.revision)

    def _on_database(self, db: sqlite3.Connection, name: str, arguments: dict[str, Any],
                     write: bool) -> ToolOutcome:
        if not write:
            result = self.domain.read_tools[name](db, arguments)
            return ToolOutcome(result, False, self.revision, _refusal(result))
        self.write_counts[name] += 1
        before, touched = content(db), db.total_changes
        result = self.domain.write_tools[name](db, arguments)
        db.commit()
        effects = changed_rows(before, content(db)) if db.total_changes != touched else 0
        self.journal.append(JournalEntry(name, arguments, self.revision))
        if effects:
            self.revision += 1
        fault = next((f for f in self.faults
                      if f.tool == name and f.call == self.write_counts[name]), None)
        if fault is not None:  # committed, then the answer is lost: the outcome is unknown
            return ToolOutcome({"error": TIMEOUT_MESSAGE}, False, self.revision,
                               TIMEOUT_MESSAGE, effects)
        return ToolOutcome(result, False, self.revision, _refusal(result), effects)

    def snapshot(self) -> Snapshot | None:
        """The trial's database now (a database domain), else None."""
        return snapshot(self.db) if self.db is not None else None

    def _replay(self, name: str, arguments: dict[str, Any], write: bool) -> ToolOutcome:
        recording = recorded_answer(self.recorded, name, arguments)
        if recording is None:
            return self._refuse(f"{name}: {NO_RECORDING}")
        if write:
            self.journal.append(JournalEntry(name, arguments, self.revision))
        return ToolOutcome(copy.deepcopy(recording.result), write, self.revision)

    def _refuse(self, message: str) -> ToolOutcome:
        return ToolOutcome({"error": message}, False, self.revision, error=message)


def _refusal(result: Any) -> str | None:
    """The server's refusal in a database tool's result (``{"error": ...}``), else None."""
    if isinstance(result, dict) and isinstance(result.get("error"), str):
        return str(result["error"])
    return None
