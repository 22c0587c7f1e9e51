"""Mutation verification: golden passes, every declared mutant is caught by its check, and
disabling any one check that is declared as a catcher makes verification fail."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from typer.testing import CliRunner

import pipeline.scoring.checks as checks
from pipeline.catalog import Suite, bundled_suites, load_suites
from pipeline.cli.app import app
from pipeline.trial.memory import StructuredMemory
from pipeline.verify.mutants import verify

SUITES = load_suites(bundled_suites())


def _passing(result: Any) -> Any:
    if isinstance(result, list):
        return [replace(r, passed=True, turn=None, step=None) for r in result]
    return None if result is None else replace(result, passed=True, turn=None, step=None)


def _disable(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> None:
    original: Callable[..., Any] = getattr(module, name)
    monkeypatch.setattr(module, name, lambda *a, **k: _passing(original(*a, **k)))


# check-id prefix -> how to switch that check off
DISABLERS: dict[str, Callable[[pytest.MonkeyPatch], None]] = {
    "forbidden_tool:": lambda mp: _disable(mp, checks, "forbidden_check"),
    "required_tool:": lambda mp: _disable(mp, checks, "required_check"),
    "argument:": lambda mp: _disable(mp, checks, "argument_check"),
    "final:": lambda mp: _disable(mp, checks, "final_check"),
    "fresh_call:": lambda mp: _disable(mp, checks, "fresh_call_check"),
    "state:": lambda mp: _disable(mp, checks, "state_checks"),
    "summary:": lambda mp: _disable(mp, checks, "summary_checks"),
    "clarification:": lambda mp: _disable(mp, checks, "clarification_check"),
    "response:": lambda mp: _disable(mp, checks, "phrase_checks"),
    "said_vs_done": lambda mp: _disable(mp, checks, "said_vs_done_check"),
    "trajectory:": lambda mp: _disable(mp, checks, "trajectory_check"),
    "grounding@": lambda mp: _disable(mp, checks, "grounding_checks"),
    "memory:invalid": lambda mp: mp.setattr(StructuredMemory, "_validate",
                                            lambda self, turn, state: None),
}


def _declared_prefixes() -> set[str]:
    found = set()
    for suite in SUITES:
        for loaded in suite.scenarios:
            for catch in loaded.scenario.catches:
                found |= {p for p in DISABLERS if catch.check.startswith(p)}
    return found


def _only_catching(prefix: str) -> list[Suite]:
    """The suites cut down to the scenarios that declare a catch by ``prefix``."""
    out = []
    for suite in SUITES:
        kept = tuple(s for s in suite.scenarios
                     if any(c.check.startswith(prefix) for c in s.scenario.catches))
        if kept:
            out.append(replace(suite, scenarios=kept))
    return out


@pytest.mark.slow  # over a second (the fast tier stays under a minute)
def test_verify_suite_passes_on_the_bundled_suites() -> None:
    result = CliRunner().invoke(app, ["verify-suite"])
    assert result.exit_code == 0, result.output[-3000:]
    assert " 0 wrong" in result.output


def test_the_declared_catchers_cover_the_core_checks() -> None:
    core = {"forbidden_tool:", "argument:", "fresh_call:", "state:", "summary:",
            "clarification:", "said_vs_done"}
    assert core <= _declared_prefixes()


@pytest.mark.parametrize("prefix", sorted(_declared_prefixes()))
def test_disabling_a_declared_check_fails_verification(prefix: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    suites = _only_catching(prefix)
    mutants = sorted({c.mutant for s in suites for loaded in s.scenarios
                      for c in loaded.scenario.catches if c.check.startswith(prefix)})
    # (That these cells pass with every check on is proven by the full verification above.)
    DISABLERS[prefix](monkeypatch)
    wrong = [c for c in verify(suites, mutants=mutants) if not c.ok]
    assert wrong, f"disabling {prefix!r} went unnoticed"
    assert any(c.expected and c.expected.startswith(prefix) for c in wrong)


@pytest.mark.parametrize("mutant", ["mutant-ungrounded-attribute", "mutant-invented-entity"])
def test_the_grounding_mutants_are_caught_by_grounding_and_by_no_other_check(
        mutant: str) -> None:
    suites = _only_catching("grounding@")
    cells = [c for c in verify(suites, mutants=[mutant]) if c.model.endswith(mutant)]
    caught = [c for c in cells if c.expected is not None]
    assert caught and all(c.ok for c in cells), [c.label() for c in cells]
    assert {(c.first_violation, c.also_failed) for c in caught} == {("grounding@1", ())}
    assert all(c.label() == "caught grounding@1" for c in caught)


def test_cli_exits_non_zero_when_a_check_is_disabled(monkeypatch: pytest.MonkeyPatch) -> None:
    DISABLERS["forbidden_tool:"](monkeypatch)
    suite = next(s for s in bundled_suites() if s.stem == "intent_change")
    result = CliRunner().invoke(app, ["verify-suite", "--suite", str(suite),
                                      "--memory-mode", "chat"])
    assert result.exit_code == 1
    assert "MISSED" in result.output or "WRONG CHECK" in result.output
