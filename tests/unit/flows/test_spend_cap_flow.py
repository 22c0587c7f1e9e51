"""A spend cap through the sweep flow and the run command's report: a priced model (the
reference server answering as ``openai/gpt-4o-mini``, priced by LiteLLM's table) stops at the
cap with exit 3 and a line naming the cap and the spend; the run is recorded as finished; a
resume with a higher cap finishes the grid."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from conftest import MEETING_SUITE
from rich.console import Console

from pipeline.errors import ExitCode
from pipeline.models.config import ModelConfig
from pipeline.reference.reference import SCRIPT_KEY, golden_script
from pipeline.reference.server import start_server
from pipeline.sweep.config import SweepConfig
from pipeline.sweep.handoff import Handed
from pipeline.sweep.stages import SweepPlan, plan
from warehouse.query import run_sql

pytestmark = pytest.mark.slow  # a Prefect flow on a local Ray


def _scripted(config: SweepConfig) -> Handed[SweepPlan]:
    """The plan with the golden script in each request body, handed to the flow run."""
    base = plan(config)
    return Handed.of(config, replace(base, pending=[
        replace(s, extra={**s.extra, "extra_body": {SCRIPT_KEY: golden_script(s.scenario)}})
        for s in base.pending]))


def _spent(root: Path) -> float:
    """The run's trials at gpt-4o-mini's list price (the server reports no cost of its own)."""
    from pipeline.models.pricing import list_price

    price = list_price(ModelConfig("openai/gpt-4o-mini"))
    assert price is not None
    rows = run_sql(root, "select input_tokens, output_tokens from trials_all").rows
    return sum(price.cost(i, o) or 0.0 for i, o in rows)


def test_the_flow_stops_at_the_cap_with_exit_3_and_resumes_with_a_higher_one(
        ray_local: Any, prefect_harness: None, tmp_path: Path) -> None:
    import flows.sweep as sweep
    from pipeline.cli.run import Terminal, report

    suite = tmp_path / "small.jsonl"
    suite.write_text("\n".join(MEETING_SUITE.read_text("utf-8").splitlines()[:3]) + "\n")
    root = tmp_path / "wh"
    with start_server(plays="golden") as server:
        def config(cap: float, resume: bool) -> SweepConfig:
            model = ModelConfig("openai/gpt-4o-mini", api_base=server.api_base)
            return SweepConfig(suites=[suite], memory_modes=["chat"], repeats=2, run_id="cap",
                               warehouse=root, models=[model], max_in_flight=1,
                               max_cost_usd=cap, resume=resume)

        capped = config(0.00004, resume=False)
        outcome = sweep.sweep_flow(capped, _scripted(capped))
        out, err = io.StringIO(), io.StringIO()
        ending = report(capped, outcome, Terminal(Console(file=out, width=200),
                                                  Console(file=err, width=200)))
        assert outcome.stopped is not None and not outcome.stopped.lost_work
        done = sum(outcome.statuses.values())
        assert 0 < done < 6 and outcome.statuses == {"complete": done}
        assert ending.code == ExitCode.INCOMPLETE == 3
        line = err.getvalue().replace("\n", " ")
        spent = _spent(root)
        assert spent >= 0.00004
        assert line.startswith("error: stopped: spend cap reached: max_cost_usd 4e-05 of the "
                               f"sweep; ${spent:.6f} spent in this run;"), line
        assert (f"{6 - done} trial(s) not started; Raise the cap (--max-cost-usd, or "
                "max_cost_usd in the spec), then: agentsweep run --run-id cap --resume") in line
        assert "what was not saved" not in line  # nothing was lost
        assert run_sql(root, "select count(*) from runs_all where finished_at is not null"
                       ).rows == [(1,)]  # recorded as finished

        resumed_config = config(1.0, resume=True)
        resumed = sweep.sweep_flow(resumed_config, _scripted(resumed_config))
    assert resumed.stopped is None and resumed.statuses == {"complete": 6 - done}
    assert run_sql(root, "select count(*), count(distinct trial_id), bool_and(passed) "
                         "from trials").rows == [(6, 6, True)]


def test_sixteen_in_flight_spend_at_most_the_cap_and_one_trial(
        ray_local: Any, prefect_harness: None, tmp_path: Path) -> None:
    """No ``max_tokens``: the worst case is unknown, so the first attempt runs alone and the
    next ones reserve its cost; without reservations all 16 start at once and all are paid."""
    import flows.sweep as sweep

    suite = tmp_path / "small.jsonl"
    suite.write_text("\n".join(MEETING_SUITE.read_text("utf-8").splitlines()[:4]) + "\n")
    root = tmp_path / "wh"
    with start_server(plays="golden") as server:
        model = ModelConfig("openai/gpt-4o-mini", api_base=server.api_base)
        wide = SweepConfig(suites=[suite], memory_modes=["chat"], repeats=4, run_id="wide",
                           warehouse=root, models=[model], max_in_flight=16,
                           max_cost_usd=0.0016)
        outcome = sweep.sweep_flow(wide, _scripted(wide))
    assert outcome.stopped is not None and not outcome.stopped.lost_work
    costs = _costs(root)
    assert 0 < len(costs) < 16
    assert sum(costs) <= 0.0016 + max(costs), (len(costs), sum(costs))


def _costs(root: Path) -> list[float]:
    from pipeline.models.pricing import list_price

    price = list_price(ModelConfig("openai/gpt-4o-mini"))
    assert price is not None
    rows = run_sql(root, "select input_tokens, output_tokens from trials_all").rows
    return [price.cost(i, o) or 0.0 for i, o in rows]
