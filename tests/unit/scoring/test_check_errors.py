"""A check that raises is a scorer failure recorded apart: a ``check_error`` row (kind and
message, secrets redacted), the trial complete with an unknown verdict, never retried, its
dialog kept; rescoring the stored trace after the fix fills the verdict."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import MEETING_SUITE

import pipeline.scoring.checks as checks_module
import pipeline.scoring.summary as summary_module
from pipeline.catalog import load_suites
from pipeline.execution.attempts import RetryBook
from pipeline.execution.retry import RetryPolicy
from pipeline.scoring import CheckResult, Journal
from pipeline.stored.rescore import rescore_run
from pipeline.sweep.grid import ModelConfig, TrialSpec, expand
from pipeline.trial.run import RunContext, run_trial, tables_of
from warehouse.query import run_sql
from warehouse.writer import WarehouseWriter

CANARY = "sk-canary-check-error-0123456789abcdef"


@pytest.fixture(scope="module")
def spec() -> TrialSpec:
    suites = load_suites([MEETING_SUITE])
    return next(expand(suites, [ModelConfig("reference/golden")], ["default"], ["chat"], 1))


def _broken_said_vs_done(journal: Journal, domain: object) -> CheckResult:
    raise RuntimeError(f"deliberately broken, key {CANARY}")


def test_a_broken_check_leaves_a_check_error_row_and_an_unknown_verdict(
        spec: TrialSpec, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checks_module, "said_vs_done_check", _broken_said_vs_done)
    result = run_trial(spec, RunContext("broken", "test"))
    errors = [c for c in result.checks if c.check_kind == "check_error"]
    assert [(e.check_id, e.counted) for e in errors] == [("check_error:said_vs_done", False)]
    assert errors[0].detail.startswith("RuntimeError: deliberately broken")
    assert CANARY not in errors[0].detail
    assert (result.status, result.trial.passed, result.trial.error_kind) == ("complete", None,
                                                                              None)
    assert any(c.check_kind == "required_tool" for c in result.checks)  # the others still ran
    assert result.events  # the dialog is kept
    attempt = RetryBook(RetryPolicy(max_attempts=3)).settle(spec, 1, result)
    assert (attempt.number, attempt.final) == (1, True)  # one attempt: not retried


def test_rescore_after_the_fix_fills_the_verdict(
        spec: TrialSpec, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    root = tmp_path / "warehouse"
    with monkeypatch.context() as patched:
        patched.setattr(checks_module, "said_vs_done_check", _broken_said_vs_done)
        WarehouseWriter(root, "broken").write_batch(tables_of([run_trial(
            spec, RunContext("broken", "test"))]))
    assert run_sql(root, "select passed from trials").rows == [(None,)]
    assert rescore_run(root, "broken", "fixed").rescored == 1
    fixed = "where run_id = 'fixed'"
    assert run_sql(root, f"select passed from trials {fixed}").rows == [(True,)]
    assert run_sql(root, f"select count(*) from checks {fixed} and check_kind = 'check_error'"
                   ).rows == [(0,)]
    assert run_sql(root, f"select count(*) from checks {fixed} and check_id = 'said_vs_done'"
                   ).rows == [(1,)]


def test_a_broken_summary_leaves_unknown_scores(
        spec: TrialSpec, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object) -> None:
        raise KeyError("no such score")

    monkeypatch.setattr(summary_module, "first_violation", broken)
    result = run_trial(spec, RunContext("broken", "test"))
    assert [c.check_id for c in result.checks if c.check_kind == "check_error"] == [
        "check_error:summary"]
    assert (result.status, result.trial.passed, result.trial.score_state) == ("complete", None,
                                                                              None)
