"""Limits in the provider's units and spend caps on a real local Ray, against the reference
HTTP server on 127.0.0.1: a 429 and a 529 pause the whole group and the sweep completes; a tpm
limit holds; a priced model's sweep stops at its spend cap and a resume with a higher cap
finishes it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from conftest import MEETING_SUITE

from pipeline.execution.retry import RetryPolicy
from pipeline.models.config import ModelConfig
from pipeline.models.faults import FaultDecision, FaultProfile
from pipeline.reference.reference import SCRIPT_KEY, golden_script
from pipeline.reference.server import start_server
from pipeline.sweep.config import SweepConfig
from pipeline.sweep.spend_cap import SpendCapReached
from pipeline.sweep.stages import SweepPlan, execute_plan, plan
from warehouse.query import run_sql

pytestmark = pytest.mark.slow  # sweeps on Ray with real pauses and limits


def _suite(directory: Path, scenarios: int) -> Path:
    lines = MEETING_SUITE.read_text("utf-8").splitlines()[:scenarios]
    directory.mkdir(parents=True, exist_ok=True)
    suite = directory / "small.jsonl"
    suite.write_text("\n".join(lines) + "\n", "utf-8")
    return suite


def _config(tmp_path: Path, run_id: str, model: ModelConfig, scenarios: int = 4,
            repeats: int = 2, **extra: Any) -> SweepConfig:
    return SweepConfig(suites=[_suite(tmp_path / "suite", scenarios)], memory_modes=["chat"],
                       repeats=repeats, run_id=run_id, warehouse=tmp_path / "wh",
                       models=[model], batch_size=5, **extra)


def _scripted(config: SweepConfig) -> SweepPlan:
    """The plan with each trial's golden script in the request body (an ``openai/`` name
    reaching the reference server)."""
    base = plan(config)
    return replace(base, pending=[
        replace(s, extra={**s.extra, "extra_body": {SCRIPT_KEY: golden_script(s.scenario)}})
        for s in base.pending])


def _rows(root: Path, sql: str) -> list[tuple[Any, ...]]:
    return run_sql(root, sql).rows


# --- a 429 and a 529 pause the group ----------------------------------------------------------

class _Scripted:
    """The server's fault decisions by request number; every request's start time kept."""

    def __init__(self, faults: dict[int, str]) -> None:
        self.faults = faults
        self.seen: list[tuple[float, str]] = []
        self.lock = threading.Lock()

    def __call__(self, profile: FaultProfile) -> FaultDecision:
        with self.lock:
            kind = self.faults.get(len(self.seen), "none")
            self.seen.append((time.monotonic(), kind))
        return FaultDecision(kind, 0.0)  # type: ignore[arg-type]


def _longest_silence(seen: list[tuple[float, str]], after: float, until: float) -> float:
    """The longest time between two request starts (or ``after`` and the first) in a span."""
    starts = [after] + [at for at, _ in seen if after < at < until]
    return max(b - a for a, b in zip(starts, starts[1:], strict=False)) if len(starts) > 1 else 0


def test_a_429_and_a_529_pause_the_group_and_the_sweep_completes(
        ray_local: Any, tmp_path: Path) -> None:
    decisions = _Scripted({6: "rate_limit", 30: "overloaded"})
    with start_server(faults=FaultProfile(retry_after_s=0.8), wire="anthropic") as server:
        server.server.decide = decisions  # type: ignore[method-assign]
        model = ModelConfig("reference-anthropic/golden", api_base=server.api_base)
        config = _config(tmp_path, "paused", model, max_in_flight=4,
                         retry=RetryPolicy(max_attempts=3, backoff_base_s=0.01,
                                           backoff_max_s=5))
        statuses = execute_plan(config, plan(config))
    assert statuses == {"complete": 8}
    kinds = [kind for _, kind in decisions.seen]
    assert kinds.count("rate_limit") == kinds.count("overloaded") == 1
    for kind, pause in (("rate_limit", 0.8), ("overloaded", 1.0)):  # Retry-After; 529: 1 s
        at = next(at for at, k in decisions.seen if k == kind)
        # Calls already on their way land after it (the client takes a while to read the
        # error); then no call of the group starts until the pause is over, from any of the 4
        # trials in flight (without the pause the others' calls are milliseconds apart).
        assert _longest_silence(decisions.seen, at, at + pause + 5) >= pause * 0.9, kind
    assert _rows(config.warehouse, "select error_kind, count(*) from attempts where "
                 "error_kind is not null group by 1 order by 1") == [
        ("overloaded", 1), ("rate_limit", 1)]


def test_a_429_pauses_the_group_in_every_worker_process(ray_local: Any, tmp_path: Path) -> None:
    """Two worker processes, 400 ms per answer (a trial lasts seconds): a 429 met in one
    process stops the other's calls of the group too (the run's pause board), not only new
    attempts (without the board the other process's trials go on calling)."""
    from pipeline.execution.executor import ExecuteOptions, execute
    from pipeline.models.call_params import call_params_from
    from pipeline.sweep.grid import with_call_params
    from pipeline.trial.run import RunContext, TrialResult

    decisions = _Scripted({8: "rate_limit"})
    pause = 2.5
    with start_server(faults=FaultProfile(retry_after_s=pause), wire="anthropic") as server:
        server.server.decide = _Delayed(decisions, 0.4)  # type: ignore[method-assign]
        model = ModelConfig("reference-anthropic/golden", api_base=server.api_base)
        config = _config(tmp_path, "board", model)
        specs = list(with_call_params(plan(config).pending,
                                      call_params_from(config.called_models())))
        results: list[TrialResult] = []
        execute(specs, RunContext("board", "test"), results.append, 4,
                options=ExecuteOptions(workers=2, retry=RetryPolicy(backoff_base_s=0.01)))
    assert sorted(r.status for r in results) == ["complete"] * 8
    at = next(at for at, k in decisions.seen if k == "rate_limit")
    # The 429 (answered at once) is read, the other process learns of it within a poll
    # (0.25 s; more on a busy machine) and its call on the wire (0.4 s) ends; then no call of
    # the group starts until the pause is nearly over (without the board: one every 0.4 s).
    # CI once saw the first calls after the pause at 2.32 s of 2.5 (cause not found): the
    # window's end leaves 0.3 s, still well past the 1.2, 1.6 and 2.0 s calls of no board.
    starts = [round(t - at, 2) for t, _ in decisions.seen if at < t < at + pause + 1]
    assert not [t for t in starts if 1.0 < t < pause - 0.3], starts
    assert any(t >= pause - 0.3 for t in starts), starts


class _Delayed:
    """Scripted decisions, answers after a fixed latency (faults at once)."""

    def __init__(self, scripted: _Scripted, delay_s: float) -> None:
        self.scripted = scripted
        self.delay_s = delay_s

    def __call__(self, profile: FaultProfile) -> FaultDecision:
        decision = self.scripted(profile)
        return decision if decision.kind != "none" else replace(decision, delay_s=self.delay_s)


# --- tpm ----------------------------------------------------------------------------------------

def test_a_tpm_limit_holds_over_a_sweep(ray_local: Any, tmp_path: Path) -> None:
    tpm = 30_000  # 500 tokens a second
    calls = _Scripted({})
    with start_server() as server:
        server.server.decide = calls  # type: ignore[method-assign]
        model = ModelConfig("openai/golden", api_base=server.api_base, tpm=tpm)
        config = _config(tmp_path, "tpm", model, scenarios=2, repeats=1, max_in_flight=4)
        statuses = execute_plan(config, _scripted(config))
    assert statuses == {"complete": 2}
    tokens, count = _rows(config.warehouse, "select sum(input_tokens + output_tokens), "
                          "sum(model_calls) from trials")[0]
    assert count == len(calls.seen) and tokens > 3 * tpm / 60
    span = calls.seen[-1][0] - calls.seen[0][0]
    # Every call but the last went through before the last started: at 500 tokens a second,
    # less one second's burst and (estimates being larger than the usage) one call's worth.
    before_last = tokens * (count - 1) / count
    assert span >= (before_last - tpm / 60 - 2 * tokens / count) / (tpm / 60)


# --- the spend cap ---------------------------------------------------------------------------

def _spend(root: Path) -> float:
    """What the run's trials cost at gpt-4o-mini's list price (the server reports no cost)."""
    from pipeline.models.pricing import list_price

    price = list_price(ModelConfig("openai/gpt-4o-mini"))
    assert price is not None
    rows = _rows(root, "select input_tokens, output_tokens from trials_all")
    return sum(price.cost(i, o) or 0.0 for i, o in rows)


def test_a_priced_sweep_stops_at_its_cap_and_a_resume_with_a_higher_cap_finishes(
        ray_local: Any, tmp_path: Path) -> None:
    with start_server(plays="golden") as server:
        def run(cap: float, resume: bool) -> Callable[[], dict[str, int]]:
            model = ModelConfig("openai/gpt-4o-mini", api_base=server.api_base)
            config = _config(tmp_path, "capped", model, max_in_flight=1, max_cost_usd=cap,
                             resume=resume)
            return lambda: execute_plan(config, _scripted(config))

        with pytest.raises(SpendCapReached) as reached:
            run(0.00005, resume=False)()
        root = tmp_path / "wh"
        done = _rows(root, "select count(*) from trials")[0][0]
        assert 0 < done < 8 and reached.value.statuses == {"complete": done}
        spent = _spend(root)
        assert spent >= 0.00005  # one trial at a time: it stopped at the cap, not before
        assert "spend cap reached: max_cost_usd 5e-05 of the sweep" in str(reached.value)
        assert f"${spent:.6f} spent" in str(reached.value)
        assert f"{8 - done} trial(s) not started" in str(reached.value)

        with pytest.raises(SpendCapReached):  # the same cap: what was spent still counts
            run(0.00005, resume=True)()
        assert _rows(root, "select count(*) from trials")[0][0] == done

        statuses = run(1.0, resume=True)()
    assert statuses == {"complete": 8 - done}
    assert _rows(root, "select count(*), count(distinct trial_id), bool_and(passed) "
                       "from trials") == [(8, 8, True)]
