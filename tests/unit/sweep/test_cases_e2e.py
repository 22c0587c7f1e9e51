"""A cases suite through the sweep path (Prefect flow, local Ray, Parquet, DuckDB): rule codes
land in ``checks``, mock mode and the thresholds in ``runs.config_json``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO

from pipeline.stored.rescore import rescore_run
from pipeline.sweep.config import SweepConfig
from pipeline.sweep.thresholds import Thresholds
from warehouse.query import run_sql

CASES = REPO / "catalogs" / "support_agent" / "suites" / "support_cases.jsonl"


@pytest.mark.slow
def test_cases_run_through_the_sweep_with_rule_codes_in_checks(
        ray_local: Any, prefect_harness: None, tmp_path: Path) -> None:
    from flows.sweep import sweep_flow

    root = tmp_path / "warehouse"
    config = SweepConfig(suites=[CASES], repeats=1, run_id="cases", warehouse=root,
                         memory_modes=["chat"], tools="mock",
                         models=[{"name": "reference/golden"},  # type: ignore[list-item]
                                 {"name": "reference/mutant-wrong-answer"}],
                         thresholds=Thresholds(critical_pass_rate=1.0, overall_pass_rate=0.9))
    outcome = sweep_flow(config)
    cases = len(CASES.read_text("utf-8").splitlines())
    assert outcome.statuses == {"complete": 2 * cases}
    rows = run_sql(root, "select model, count(*) filter (where passed), count(*) from trials "
                         "group by model order by model").rows
    assert rows == [("reference/golden", cases, cases), ("reference/mutant-wrong-answer", 0,
                                                          cases)]
    failed = run_sql(root, "select t.scenario_id, c.check_kind, c.check_version from checks c "
                           "join trials t using (run_id, trial_id) where not c.passed and "
                           "c.check_id = 'schema:/order/total_rub'").rows
    assert failed == [("order-json", "case_schema", 1)]
    kinds = {r[0] for r in run_sql(root, "select distinct check_kind from checks").rows}
    assert {"case_decision", "case_required_term", "case_forbidden_term", "case_schema"} <= kinds
    stored = json.loads(run_sql(root, "select config_json from runs").rows[0][0])
    assert stored["tools"] == "mock" and stored["thresholds"]["critical_pass_rate"] == 1.0
    refused = run_sql(root, "select count(*) from events where tool_error like "
                            "'%no recorded result%'").rows[0][0]
    assert refused >= 1
    again = rescore_run(root, "cases", "cases-rescored")
    assert (again.rescored, again.skipped, again.scenarios_changed) == (2 * cases, 0, 0)
    same = run_sql(root, "select count(*) from trials a join trials b using (trial_id) where "
                         "a.run_id = 'cases' and b.run_id = 'cases-rescored' and "
                         "a.passed = b.passed and a.first_violation_check is not distinct "
                         "from b.first_violation_check").rows[0][0]
    assert same == 2 * cases
