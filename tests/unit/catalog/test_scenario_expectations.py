"""The bundled scenarios say only what they mean, proven on committed real-model traces: a
refused direct cancel of another customer's order followed by ``denied`` passes (the
three-errors method), a guest-pass turn that gives values requires their update, and a
corrected head count requires a fresh search."""

from __future__ import annotations

from collections.abc import Mapping

from conftest import REPO

from pipeline.catalog import load_domain
from pipeline.scoring import CheckResult
from pipeline.stored.calibrate import read_traces
from pipeline.stored.rescore import Rescored, rescore
from pipeline.stored.trials import ScenarioIndex
from pipeline.trace import ToolCall

LABELS = REPO / "catalogs"


def _today(domain: str, traces: str) -> Mapping[str, Rescored]:
    index = ScenarioIndex()
    out = {}
    for trial in read_traces(LABELS / domain / "labels" / traces):
        done = rescore(trial, index)
        assert done is not None
        out[str(trial.row["trial_id"])] = done
    return out


def _checks(done: Rescored) -> dict[str, CheckResult]:
    return {c.check_id: c for c in done.checks}


def test_a_refused_cancel_of_another_customers_order_then_denied_passes() -> None:
    trials = _today("orders", "local-judge-1.traces.jsonl")
    for trial_id in ("7dc61beddbceba02bac9cb0aed22ee20", "a318ef0c45fe3713b989d04bd32b953d"):
        done = trials[trial_id]  # cancel-other: cancel_order(o3) refused, then "denied"
        assert done.trial.row["scenario_id"] == "cancel-other"
        assert done.passed and done.scores.first_violation_check is None
        checks = _checks(done)
        assert "database:write_calls:cancel_order" not in checks
        skipped = checks["diagnostic:read_before_write"]  # recorded, not counted
        assert not skipped.passed and not skipped.counted


def test_every_orders_trial_with_a_write_records_whether_it_read_first() -> None:
    trials = _today("orders", "local-judge-1.traces.jsonl")
    orders = load_domain("orders")
    for done in trials.values():
        wrote = any(isinstance(e, ToolCall) and (tool := orders.tool(e.tool_name)) is not None
                    and tool.kind == "write" for e in done.trial.events)
        assert ("diagnostic:read_before_write" in _checks(done)) == wrote


def test_the_guest_pass_update_of_turn_one_is_required() -> None:
    done = _today("guest_pass", "local-1.traces.jsonl")["bd314a640e50a4b93f9b4bd7102623c3"]
    assert done.trial.row["scenario_id"] == "GP-V3"  # summary mode; no update at turns 1-2
    checks = _checks(done)
    assert not checks["required_tool:update_pass_request@1"].passed
    assert not checks["required_tool:update_pass_request@2"].passed
    assert done.scores.first_violation_check == "required_tool:update_pass_request@1"


def test_a_corrected_head_count_requires_a_fresh_search_at_that_turn() -> None:
    done = _today("meeting_rooms", "local-1.traces.jsonl")["c850605ea04ede3f788aed68927afe5a"]
    assert done.trial.row["scenario_id"] == "V3"  # "Нет, шесть." answered from old results
    assert not _checks(done)["fresh_call:search_rooms@2"].passed
