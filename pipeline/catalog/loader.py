"""Load scenario suites (JSONL) with line-precise errors; nothing runs on bad input."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Any, Literal

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from pipeline.catalog.cases import is_case, parse_case
from pipeline.catalog.conditions import is_condition_task, parse_condition_task
from pipeline.catalog.database import check_database_rules
from pipeline.catalog.domains import Domain, catalog_roots, catalogs_root, load_domain
from pipeline.catalog.errors import CatalogError, format_location, raise_all
from pipeline.catalog.expectations import check_expectations
from pipeline.catalog.golden import check_golden_calls, short
from pipeline.catalog.lines import validate_line
from pipeline.catalog.models import Scenario
from pipeline.catalog.schema import scenario_schema
from pipeline.catalog.state_paths import has_path
from pipeline.catalog.turns import check_turns
from pipeline.util.hashing import sha256_json
from pipeline.util.untrusted import jsonl_lines

SuiteKind = Literal["scenarios", "cases", "conditions"]


@dataclass(frozen=True)
class LoadedScenario:
    scenario: Scenario
    sha256: str
    """Hash of the scenario's canonical JSON (as parsed, before defaults)."""
    line: int


@dataclass(frozen=True)
class Suite:
    id: str
    path: Path
    sha256: str
    scenarios: tuple[LoadedScenario, ...]
    kind: SuiteKind = "scenarios"
    """``cases``: every line a regression case (pipeline.catalog.cases); ``conditions``: every
    line a condition task (pipeline.catalog.conditions)."""


@cache
def _validator() -> Draft202012Validator:
    return Draft202012Validator(scenario_schema())


DEFAULT_SUITES_FILE = "default-suites.txt"
"""In the bundled catalog root: the suites (ids, one per line) a run without --suite runs."""


def known_suites() -> dict[str, Path]:
    """Suite id (file stem) -> path, for every ``<domain>/suites/*.jsonl`` of every catalog
    root; an id in two places is an error."""
    found: dict[str, Path] = {}
    for root in catalog_roots():
        for path in sorted(root.glob("*/suites/*.jsonl")):
            if path.stem in found:
                raise CatalogError(str(path), None, "suite", f"suite id {path.stem!r} is also "
                                   f"{found[path.stem]}")
            found[path.stem] = path
    return found


def bundled_suites() -> list[Path]:
    """The default run's suites: those listed in the bundled ``default-suites.txt``."""
    listing = catalogs_root() / DEFAULT_SUITES_FILE
    known = known_suites()
    paths = []
    for number, line in enumerate(listing.read_text("utf-8").splitlines(), start=1):
        suite_id = line.split("#", 1)[0].strip()
        if not suite_id:
            continue
        if suite_id not in known:
            raise CatalogError(str(listing), number, "suite", f"no suite {suite_id!r}")
        paths.append(known[suite_id])
    return paths


def load_suites(paths: list[Path]) -> list[Suite]:
    suites = [load_suite(p) for p in paths]
    seen: dict[str, Path] = {}
    for suite in suites:
        if suite.id in seen:
            raise CatalogError(str(suite.path), None, "suite", f"suite id {suite.id!r} also "
                               f"used by {seen[suite.id]}")
        seen[suite.id] = suite.path
    return suites


def load_suite(path: Path) -> Suite:
    """The suite in ``path``, parsed and checked against its domains; CatalogError naming the
    file, line and field of every mistake. A suite read again in this process with the same
    bytes and catalog roots is not parsed again (``_parsed``)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CatalogError(str(path), None, "-", f"cannot read: {exc.strerror}") from None
    return _parsed(path, data, tuple(catalog_roots()))


@lru_cache(maxsize=64)
def _parsed(path: Path, data: bytes, roots: tuple[Path, ...]) -> Suite:
    """One suite's parse and checks, kept per (path, bytes, catalog roots): its scenarios are
    frozen models, and the domains they were checked against are cached per folder for the
    process already (``domains.load_domain``)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise CatalogError(str(path), None, "-", "not UTF-8") from None
    scenarios, errors, kind = _parse_lines(path, text)
    raise_all(errors)
    if not scenarios:
        raise CatalogError(str(path), None, "", "the suite has no scenarios")
    return Suite(path.stem, path, hashlib.sha256(data).hexdigest(), tuple(scenarios),
                 kind or "scenarios")


def _parse_lines(path: Path, text: str
                 ) -> tuple[list[LoadedScenario], list[CatalogError], SuiteKind | None]:
    """Every line's scenarios, every line's mistake (its first; the line is skipped) and the
    suite's kind (its first line's)."""
    scenarios: list[LoadedScenario] = []
    errors: list[CatalogError] = []
    ids: dict[str, int] = {}
    kind: SuiteKind | None = None
    for number, line in enumerate(jsonl_lines(text), start=1):
        if not line.strip() or line.lstrip().startswith("//"):
            continue
        try:
            raw = _json_line(path, number, line)
            kind = kind or _kind_of(raw)
            for loaded in _parse_line(path, number, raw, kind):
                _refuse_duplicate(path, number, loaded, ids)
                scenarios.append(loaded)
        except CatalogError as exc:
            errors.extend(getattr(exc, "errors", (exc,)))
    return scenarios, errors, kind


def _refuse_duplicate(path: Path, number: int, loaded: LoadedScenario,
                      ids: dict[str, int]) -> None:
    previous = ids.get(loaded.scenario.id)
    if previous is not None:
        raise CatalogError(str(path), number, "id", f"duplicate id {loaded.scenario.id!r} "
                           f"(first on line {previous})")
    ids[loaded.scenario.id] = number


def _json_line(path: Path, number: int, line: str) -> Any:
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        raise CatalogError(str(path), number, "-", f"invalid JSON at column {exc.colno}: "
                           f"{exc.msg}") from None


def _kind_of(raw: Any) -> SuiteKind:
    if is_case(raw):
        return "cases"
    return "conditions" if is_condition_task(raw) else "scenarios"


_LINE_OF_KIND: dict[SuiteKind, str] = {
    "scenarios": "a scenario (it has turns)", "cases": "a case (it has input)",
    "conditions": "a condition task (it has condition)",
}


def _parse_line(path: Path, number: int, raw: Any, kind: SuiteKind) -> list[LoadedScenario]:
    where = str(path)
    if _kind_of(raw) != kind:
        raise CatalogError(where, number, "-", f"this is a {kind} suite (its first line): "
                           f"every line is {_LINE_OF_KIND[kind]}")
    if kind == "cases":
        return [LoadedScenario(parse_case(path, number, raw), sha256_json(raw), number)]
    if kind == "conditions":
        generated = []
        for scenario, sha256 in parse_condition_task(path, number, raw):
            domain = load_domain(scenario.domain)
            _check_against_domain(where, number, scenario, domain)
            check_expectations(where, number, scenario, domain)
            generated.append(LoadedScenario(scenario, sha256, number))
        return generated
    scenario = validate_line(Scenario, _validator(), where, number, raw)
    try:
        domain = load_domain(scenario.domain)
    except CatalogError as exc:
        if exc.path != scenario.domain:
            raise  # the domain exists and its own file is broken: that file's error
        raise CatalogError(where, number, "domain", exc.message) from None
    _check_against_domain(where, number, scenario, domain)
    check_expectations(where, number, scenario, domain)
    return [LoadedScenario(scenario, sha256_json(raw), number)]


def _check_against_domain(where: str, number: int, scenario: Scenario, domain: Domain) -> None:
    check_turns(where, number, scenario)
    for t, turn in enumerate(scenario.turns):
        check_golden_calls(where, number, f"turns.{t}.golden", turn.golden, domain)
        if turn.if_refused is not None:
            _check_conditional_turn(where, number, t, turn.if_refused, domain)
    if scenario.database is not None:
        check_database_rules(where, number, "database", scenario.database, domain)
    for field in scenario.state_changes:
        if not has_path(domain.seed_state, field):
            raise CatalogError(where, number, f"state_changes.{field}", f"{field!r} is not a "
                               f"field of the seed state of domain {domain.name}")
    _check_golden_states(where, number, scenario, domain)


def _check_conditional_turn(where: str, number: int, index: int, tool_name: str,
                            domain: Domain) -> None:
    field = f"turns.{index}.if_refused"
    if index == 0:
        raise CatalogError(where, number, field, "the first turn cannot be conditional: no "
                           "earlier turn's refusal for it to answer")
    tool = domain.tool(tool_name)
    if tool is None or tool.kind != "write":
        raise CatalogError(where, number, field, f"{tool_name!r} is not a write tool of domain "
                           f"{domain.name}: there is no refusal of it to answer")


def _check_golden_states(where: str, number: int, scenario: Scenario, domain: Domain) -> None:
    for t, turn in enumerate(scenario.turns):
        if turn.state is None:
            continue
        if domain.state_schema is None:
            raise CatalogError(where, number, f"turns.{t}.state",
                               f"domain {domain.name} has no state.schema.json")
        error = best_match(Draft202012Validator(dict(domain.state_schema)).iter_errors(
            turn.state))
        if error is not None:
            path = format_location([f"turns.{t}.state", *error.absolute_path])
            raise CatalogError(where, number, path, short(error.message))
        broken = domain.state_invariants(dict(turn.state)) if domain.state_invariants else []
        if broken:
            raise CatalogError(where, number, f"turns.{t}.state", f"invariant: {broken[0]}")


