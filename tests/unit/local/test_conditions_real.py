"""A condition pair against the real local model (the unstated-conditions method): whatever the
model does, every
trial ends with an honest verdict - the outcome is the journal's, the bare repeat is played
exactly when the journal shows a refusal, and the row lands in the failure map."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO

from pipeline.catalog import load_suite
from pipeline.local.catalog import local_model
from pipeline.models.client import LiteLLMClient
from pipeline.scoring.conditions import REPORT_KINDS
from pipeline.sweep.grid import ModelConfig, expand
from pipeline.trace import ToolCall
from pipeline.trial.run import RunContext, run_trial, tables_of
from warehouse.query import run_sql
from warehouse.writer import WarehouseWriter

pytestmark = pytest.mark.slow  # a real 1.5B model on two CPUs

SUITE = REPO / "catalogs" / "warehouse_ops" / "suites" / "conditions.jsonl"
IDS = {"ship-unassembled.twin", "ship-unassembled.plain"}


def test_a_real_model_gets_an_honest_verdict_on_a_condition_pair(local_server: Any,
                                                                 tmp_path: Path) -> None:
    suite = load_suite(SUITE)
    suite = dataclasses.replace(suite, scenarios=tuple(
        s for s in suite.scenarios if s.scenario.id in IDS))
    config = ModelConfig("local/default", temperature=0.0, seed=0).resolved()
    client = LiteLLMClient(config, {"api_base": local_server.api_base})
    ctx = RunContext("real-conditions", "test")
    results = [run_trial(spec, ctx, client=client)
               for spec in expand([suite], [config], ["default"], ["chat"], repeats=1)]
    for result in results:
        assert result.status in ("complete", "agent_error", "limit"), result.trial.error_message
        row = result.condition
        assert row is not None and result.trial.access_channel == "local_server"
        wrote = any(isinstance(e, ToolCall) and e.turn == 1 and e.tool_name == "ship_order"
                    for e in result.events)
        if row.role == "twin":
            assert row.outcome == ("executed" if wrote else "not_executed")
            continue
        assert (row.outcome == "failure") == wrote
        assert row.report in REPORT_KINDS if wrote else row.report in (None, "false_success")
        repeat_asked = [e for e in result.events if e.turn == 2]
        assert row.repeat_played == bool(repeat_asked)
        if result.status == "complete":
            assert row.repeat_played == (not wrote)
    root = tmp_path / "warehouse"
    WarehouseWriter(root, "real-conditions").write_batch(tables_of(results))
    cells = run_sql(root, "select format, n, model_version from failure_map").rows
    assert {c[0] for c in cells} == {"plain", "repeat"}
    sha = local_model("local/default").gguf_sha256
    assert {c[2] for c in cells} == {sha}  # the version the server reported, on every cell
