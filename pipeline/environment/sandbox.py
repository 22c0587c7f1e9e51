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

from pipeline.catalog import Domain, ToolSpec
from pipeline.catalog.case_models import RecordedResult
from pipeline.catalog.database_models import TIMEOUT_MESSAGE, DatabaseRules
from pipeline.catalog.state_paths import set_path
from pipeline.environment.database import (
    Content,
    Snapshot,
    changed_rows,
    content,
    fresh_database,
    snapshot,
)

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


_validators: dict[int, tuple[ToolSpec, Draft202012Validator]] = {}


def _validator(spec: ToolSpec) -> Draft202012Validator:
    """The validator of a tool's arguments, built once per tool spec in the process (a
    validator keeps no state between calls; the key holds the spec, so its id is not reused)."""
    kept = _validators.get(id(spec))
    if kept is None:
        kept = _validators[id(spec)] = (spec, Draft202012Validator(spec.parameters))
    return kept[1]


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
        self._content: Content = {}
        """The database's content after the last write that changed it: the next write's
        "before" while no statement changed a row since (``_content_at``)."""
        self._content_at = -1

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
        error = best_match(_validator(spec).iter_errors(arguments))
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
        touched = db.total_changes
        before = self._content if self._content_at == touched else content(db)
        result = self.domain.write_tools[name](db, arguments)
        db.commit()
        effects = 0
        if db.total_changes != touched:
            after = content(db)
            effects = changed_rows(before, after)
            self._content, self._content_at = after, db.total_changes
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
