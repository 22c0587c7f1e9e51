"""Load scenario suites (JSONL) with line-precise errors; nothing runs on bad input."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from pipeline.catalog.cases import CASE_MARK, is_case, parse_case
from pipeline.catalog.domains import Domain, catalog_roots, catalogs_root, load_domain
from pipeline.catalog.errors import CatalogError, format_location
from pipeline.catalog.expectations import check_expectations
from pipeline.catalog.golden import check_golden_calls, short
from pipeline.catalog.lines import validate_line
from pipeline.catalog.models import Scenario
from pipeline.catalog.schema import scenario_schema
from pipeline.hashing import sha256_json

SuiteKind = Literal["scenarios", "cases"]


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
    """``cases``: every line a regression case (pipeline.catalog.cases)."""


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
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CatalogError(str(path), None, "-", f"cannot read: {exc.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise CatalogError(str(path), None, "-", "not UTF-8") from None
    scenarios: list[LoadedScenario] = []
    ids: dict[str, int] = {}
    kind: SuiteKind | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("//"):
            continue
        raw = _json_line(path, number, line)
        kind = kind or ("cases" if is_case(raw) else "scenarios")
        loaded = _parse_line(path, number, raw, kind)
        previous = ids.get(loaded.scenario.id)
        if previous is not None:
            raise CatalogError(str(path), number, "id",
                               f"duplicate id {loaded.scenario.id!r} (first on line {previous})")
        ids[loaded.scenario.id] = number
        scenarios.append(loaded)
    if not scenarios:
        raise CatalogError(str(path), None, "-", "the suite has no scenarios")
    return Suite(path.stem, path, hashlib.sha256(data).hexdigest(), tuple(scenarios),
                 kind or "scenarios")


def _json_line(path: Path, number: int, line: str) -> Any:
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        raise CatalogError(str(path), number, "-", f"invalid JSON at column {exc.colno}: "
                           f"{exc.msg}") from None


def _parse_line(path: Path, number: int, raw: Any, kind: SuiteKind) -> LoadedScenario:
    where = str(path)
    if is_case(raw) != (kind == "cases"):
        expected = "a case (it has input)" if kind == "cases" else "a scenario (it has turns)"
        raise CatalogError(where, number, CASE_MARK if kind == "scenarios" else "-",
                           f"this is a {kind} suite (its first line): every line is {expected}")
    if kind == "cases":
        return LoadedScenario(parse_case(path, number, raw), sha256_json(raw), number)
    scenario = validate_line(Scenario, _validator(), where, number, raw)
    try:
        domain = load_domain(scenario.domain)
    except CatalogError as exc:
        if exc.path != scenario.domain:
            raise  # the domain exists and its own file is broken: that file's error
        raise CatalogError(where, number, "domain", exc.message) from None
    _check_against_domain(where, number, scenario, domain)
    check_expectations(where, number, scenario, domain)
    return LoadedScenario(scenario, sha256_json(raw), number)


def _check_against_domain(where: str, number: int, scenario: Scenario, domain: Domain) -> None:
    for t, turn in enumerate(scenario.turns):
        check_golden_calls(where, number, f"turns.{t}.golden", turn.golden, domain)
    _check_golden_states(where, number, scenario, domain)


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


